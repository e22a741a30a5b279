package torch

// #include <stdlib.h>
// #include "count.h"
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"

	lib "github.com/sugarme/gotch/libtch"
)

// Phase is a part of a training step, to which Counting attributes the calls into libtorch made while it is
// the current one.
type Phase int

// The phases of a step. Other is whatever runs outside the rest (building the batch, reading metrics).
const (
	PhaseOther Phase = iota
	PhaseForward
	PhaseLoss
	PhaseBackward
	PhaseOptimizer
	numPhases
)

// Count is what one phase asked of libtorch.
type Count struct {
	// Calls is the number of calls from Go into libtorch: gotch's bindings (cmd/setup makes them count,
	// lib.Calls) and convrep's shim functions that do a step's work. Frees of handles are not counted. On a
	// GPU each call costs the host about one kernel launch or more, so this is the count to keep low.
	Calls int64 `json:"calls"`
	// Ops is the number of operators libtorch's dispatcher ran, at every nesting level (a linear counts
	// itself and the matmul and add it calls), on every thread: for Backward, the operators the autograd
	// engine ran for the one call that started it.
	Ops int64 `json:"ops"`
	// BackwardNodes is the number of autograd nodes the engine applied.
	BackwardNodes int64 `json:"backward_nodes"`
}

// Counts are the calls of each phase; the JSON keys name the phases.
type Counts struct {
	Forward   Count `json:"forward"`
	Loss      Count `json:"loss"`
	Backward  Count `json:"backward"`
	Optimizer Count `json:"optimizer"`
	Other     Count `json:"other"`
}

// Total is the sum over the phases.
func (c Counts) Total() Count {
	var t Count
	for _, p := range []Count{c.Forward, c.Loss, c.Backward, c.Optimizer, c.Other} {
		t.Calls += p.Calls
		t.Ops += p.Ops
		t.BackwardNodes += p.BackwardNodes
	}
	return t
}

// counter is the state of a Counting: the current phase and the totals when it became current.
var counter struct {
	on    atomic.Bool
	mu    sync.Mutex
	phase Phase
	at    Count // lib.Calls and the shim's counters when phase became current
	per   [numPhases]Count
}

// Counting starts counting libtorch calls and operators per phase, process-wide, from PhaseOther; stop ends
// it and returns the counts. Operators are counted through a RecordFunction callback, which slows every
// operator down while it is installed: count a step of its own, not a timed one. One Counting at a time.
func Counting() (stop func() (Counts, error), err error) {
	if !counter.on.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("count libtorch calls: already counting")
	}
	if err := takeError(C.convrep_count_ops(1)); err != nil {
		counter.on.Store(false)
		return nil, fmt.Errorf("count libtorch operators: %w", err)
	}
	counter.mu.Lock()
	counter.phase, counter.at, counter.per = PhaseOther, now(), [numPhases]Count{}
	counter.mu.Unlock()
	return func() (Counts, error) {
		counter.mu.Lock()
		settle()
		per := counter.per
		counter.mu.Unlock()
		counter.on.Store(false)
		if err := takeError(C.convrep_count_ops(0)); err != nil {
			return Counts{}, fmt.Errorf("stop counting libtorch operators: %w", err)
		}
		return Counts{Forward: per[PhaseForward], Loss: per[PhaseLoss], Backward: per[PhaseBackward],
			Optimizer: per[PhaseOptimizer], Other: per[PhaseOther]}, nil
	}, nil
}

// EnterPhase makes p the current phase until restore is called, which makes the previous one current again:
//
//	defer torch.EnterPhase(torch.PhaseForward)()
//
// Phases nest (a model's forward pass inside an objective's loss). Outside a Counting it costs one atomic load.
func EnterPhase(p Phase) (restore func()) {
	if !counter.on.Load() {
		return noRestore
	}
	prev := switchPhase(p)
	return func() { switchPhase(prev) }
}

var noRestore = func() {}

func switchPhase(p Phase) (prev Phase) {
	counter.mu.Lock()
	defer counter.mu.Unlock()
	settle()
	prev, counter.phase = counter.phase, p
	return prev
}

// settle adds what was counted since the current phase began, or since the last settle, to that phase.
func settle() {
	n := now()
	c := &counter.per[counter.phase]
	c.Calls += n.Calls - counter.at.Calls
	c.Ops += n.Ops - counter.at.Ops
	c.BackwardNodes += n.BackwardNodes - counter.at.BackwardNodes
	counter.at = n
}

func now() Count {
	return Count{Calls: lib.Calls(), Ops: int64(C.convrep_ops()), BackwardNodes: int64(C.convrep_backward_nodes())}
}

// countCall counts one call of a shim function that does a step's work.
func countCall() { lib.AddCalls(1) }

// LibtorchVersion is the version of the libtorch headers the shim was compiled against, such as "1.13.0" or
// "2.11.0" (Debian's 1.13.1 says 1.13.0).
func LibtorchVersion() string { return C.GoString(C.convrep_torch_version()) }
