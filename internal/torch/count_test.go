package torch

import (
	"runtime"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// A counted mini step: each gotch op is one call into libtorch, attributed to the phase current when it ran
// (nested phases restore their parent); the operators and autograd nodes come from libtorch's dispatcher and
// engine, the backward pass's included.
func TestCountingSplitsByPhase(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := ones(t).MustSetRequiresGrad(true, true)
	defer w.MustDrop()
	two := ts.FloatScalar(2) // a scalar is a call too: made before counting

	stop, err := Counting()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Counting(); err == nil || !strings.Contains(err.Error(), "already counting") {
		t.Errorf("a second Counting: error %v", err)
	}
	x := ones(t) // other: 1
	var loss *ts.Tensor
	func() {
		defer EnterPhase(PhaseLoss)()
		var y *ts.Tensor
		func() {
			defer EnterPhase(PhaseForward)()
			y = w.MustMul(x, false) // forward: 2
			y = y.MustTanh(true)
		}()
		loss = y.MustSum(gotch.Float, true).MustMulScalar(two, true) // loss: 2
	}()
	func() {
		defer EnterPhase(PhaseBackward)()
		if err := loss.Backward(); err != nil { // backward: 1 call, the engine's ops
			t.Error(err)
		}
	}()
	func() {
		defer EnterPhase(PhaseOptimizer)()
		if err := ZeroGrads([]*ts.Tensor{w, x}); err != nil { // optimizer: 1 (the shim's)
			t.Error(err)
		}
	}()
	counts, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	torch := []struct {
		phase string
		got   Count
		calls int64
	}{{"other", counts.Other, 1}, {"forward", counts.Forward, 2}, {"loss", counts.Loss, 2},
		{"backward", counts.Backward, 1}, {"optimizer", counts.Optimizer, 1}}
	for _, c := range torch {
		if c.got.Calls != c.calls {
			t.Errorf("%s: %d calls, want %d", c.phase, c.got.Calls, c.calls)
		}
		// Every call above runs at least one operator; only backward runs autograd nodes.
		if c.got.Ops < c.calls {
			t.Errorf("%s: %d operators for %d calls", c.phase, c.got.Ops, c.calls)
		}
		if (c.got.BackwardNodes > 0) != (c.phase == "backward") {
			t.Errorf("%s: %d autograd nodes", c.phase, c.got.BackwardNodes)
		}
	}
	// sum(2·tanh(w·x)): the engine applies MulBackward (×2), SumBackward, TanhBackward, MulBackward and w's
	// gradient accumulator, each running operators of its own.
	if counts.Backward.BackwardNodes < 4 || counts.Backward.Ops < 4 {
		t.Errorf("backward: %d nodes, %d operators; want at least 4 of each", counts.Backward.BackwardNodes, counts.Backward.Ops)
	}
	if tot := counts.Total(); tot.Calls != 7 {
		t.Errorf("total %d calls, want 7", tot.Calls)
	}

	// Stopped: phases are no-ops again and the operator callback is gone.
	ops := now().Ops
	EnterPhase(PhaseForward)()
	ones(t).MustDrop()
	if now().Ops != ops {
		t.Errorf("operators still counted after stop")
	}
	stop2, err := Counting()
	if err != nil {
		t.Fatalf("Counting after stop: %v", err)
	}
	if c, err := stop2(); err != nil || c.Total() != (Count{}) {
		t.Errorf("an empty Counting: %+v, %v", c, err)
	}
	loss.MustDrop()
	x.MustDrop()
}

func TestLibtorchVersion(t *testing.T) {
	v := LibtorchVersion()
	if parts := strings.Split(v, "."); len(parts) < 2 || (parts[0] != "1" && parts[0] != "2") {
		t.Errorf("LibtorchVersion() = %q, want major.minor.patch of 1.x or 2.x", v)
	}
}
