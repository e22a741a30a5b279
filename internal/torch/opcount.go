package torch

// #include <stdlib.h>
// #include "opcount.h"
import "C"

// OpCount is what libtorch ran between StartOpCount and its stop function: ATen operator calls (nested
// ones included, so linear counts its matmul or addmm too; the kernels a device launches are among them)
// and the autograd nodes backward ran.
type OpCount struct{ Ops, BackwardNodes int64 }

// StartOpCount starts counting the calling OS thread's libtorch work (and the work backward hands to
// autograd's threads); the function it returns stops and gives the counts. Lock the goroutine to its thread
// (runtime.LockOSThread) for the count to mean anything. One count at a time.
func StartOpCount() (stop func() OpCount, err error) {
	if err := takeError(C.convrep_opcount_start()); err != nil {
		return nil, err
	}
	return func() OpCount {
		var ops, nodes C.int64_t
		C.convrep_opcount_stop(&ops, &nodes)
		return OpCount{Ops: int64(ops), BackwardNodes: int64(nodes)}
	}, nil
}
