package torch

import (
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The counter sees the ops the thread that started it calls, those they run inside, and backward's nodes;
// one count runs at a time.
func TestOpCount(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := ts.MustOnes([]int64{3}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	defer w.MustDrop()
	for _, c := range []struct {
		name               string
		run                func()
		calls, minBackward int64 // calls: exactly, or at least where backward runs (the engine calls ops too)
	}{
		{"nothing", func() {}, 0, 0},
		{"two ops", func() { sumOfSquares(w).MustDrop() }, 2, 0},
		{"forward and backward", func() {
			y := sumOfSquares(w)
			if err := y.Backward(); err != nil {
				t.Fatal(err)
			}
			y.MustDrop()
		}, 2, 2},
	} {
		stop, err := StartOpCount()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := StartOpCount(); err == nil {
			t.Fatal("a second count started while one was on")
		}
		c.run()
		got := stop()
		callsOK := got.Calls == c.calls || (c.minBackward > 0 && got.Calls >= c.calls)
		if !callsOK || got.Ops < got.Calls || got.BackwardNodes < c.minBackward || (c.minBackward == 0 && got.BackwardNodes != 0) {
			t.Errorf("%s: counted %+v, want %d calls, at least as many ops, and %d or more backward nodes (none where 0)",
				c.name, got, c.calls, c.minBackward)
		}
	}
}

// sumOfSquares is sum(w·w): a multiplication and a sum.
func sumOfSquares(w *ts.Tensor) *ts.Tensor {
	return w.MustMul(w, false).MustSum(gotch.Float, true)
}
