package torch

import (
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The counter sees the ops of the thread that started it and backward's nodes; one count runs at a time.
func TestOpCount(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := ts.MustOnes([]int64{3}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	defer w.MustDrop()
	for _, c := range []struct {
		name            string
		run             func()
		minOps, minNode int64
	}{
		{"nothing", func() {}, 0, 0},
		{"two ops", func() { sumOfSquares(w) }, 2, 0},
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
		if got.Ops < c.minOps || got.BackwardNodes < c.minNode || (c.minOps == 0 && got.Ops != 0) || (c.minNode == 0 && got.BackwardNodes != 0) {
			t.Errorf("%s: counted %+v, want at least %d ops and %d nodes (none where 0)", c.name, got, c.minOps, c.minNode)
		}
	}
}

// sumOfSquares is sum(w·w): a multiplication and a sum.
func sumOfSquares(w *ts.Tensor) *ts.Tensor {
	return w.MustMul(w, false).MustSum(gotch.Float, true)
}
