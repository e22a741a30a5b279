package torch

// #include <stdlib.h>
// #include "opcount.h"
import "C"

// OpCount is what libtorch ran between StartOpCount and its stop function: the ATen operators the program
// called (Calls; each gotch op is one, whatever it runs inside), every ATen operator call (Ops, nested ones
// included: linear counts its addmm too, and libtorch 1.13's CPU bmm one addmm per matrix of the batch),
// and the autograd nodes backward ran (BackwardNodes, each a call the engine makes). Calls + BackwardNodes
// is the number of libtorch calls a step makes, the proxy for a GPU's kernel launches.
type OpCount struct{ Calls, Ops, BackwardNodes int64 }

// StartOpCount starts counting the calling OS thread's libtorch work (and the work backward hands to
// autograd's threads); the function it returns stops and gives the counts. Lock the goroutine to its thread
// (runtime.LockOSThread) for the count to mean anything. One count at a time.
func StartOpCount() (stop func() OpCount, err error) {
	if err := takeError(C.convrep_opcount_start()); err != nil {
		return nil, err
	}
	return func() OpCount {
		var top, ops, nodes C.int64_t
		C.convrep_opcount_stop(&top, &ops, &nodes)
		return OpCount{Calls: int64(top), Ops: int64(ops), BackwardNodes: int64(nodes)}
	}, nil
}
