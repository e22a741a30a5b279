package torch

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// cmd/setup's patched RunBackward hands libtorch contiguous arrays of roots, inputs and output slots: gotch
// passed one slot per input, separately allocated, and the first root and input only, so with two inputs
// libtorch wrote the second gradient past a one-handle buffer. z = Σ x·y with two inputs: ∂z/∂x = y, ∂z/∂y = x.
func TestRunBackwardSeveralInputs(t *testing.T) {
	leaf := func(v []float32) *ts.Tensor { return ts.MustOfSlice(v).MustSetRequiresGrad(true, true) }
	x, y := leaf([]float32{1, 2, 3}), leaf([]float32{4, 5, 6})
	z := x.MustMul(y, false).MustSum(x.DType(), true)
	grads, err := ts.RunBackward([]*ts.Tensor{z}, []*ts.Tensor{x, y}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer Drop(append(grads, x, y, z)...)
	if len(grads) != 2 {
		t.Fatalf("%d gradients, want 2", len(grads))
	}
	for i, want := range [][]float64{{4, 5, 6}, {1, 2, 3}} {
		got := grads[i].Float64Values()
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("gradient %d = %v, want %v", i, got, want)
		}
	}
}

// Handles nobody drops, made outside any Scope, are still freed by their finalizers: a handle no longer
// carries a 100 KB Go allocation that made the collector run, so patched gotch starts a collection each time
// the count of live handles doubles. With the collector otherwise off, all n leaked handles would stay live.
func TestLeakedHandlesAreCollected(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := ts.LiveTensors()
	const n = 1 << 17
	for range n {
		ts.MustOnes([]int64{1}, gotch.Float, gotch.CPU) // leaked on purpose
	}
	for deadline := time.Now().Add(5 * time.Second); ts.LiveTensors()-before > n/2 && time.Now().Before(deadline); {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if live := ts.LiveTensors() - before; live > n/2 {
		t.Fatalf("%d of %d leaked handles still live", live, n)
	}
}
