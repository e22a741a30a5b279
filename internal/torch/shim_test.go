package torch

import (
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func TestManualSeedRepeats(t *testing.T) {
	draw := func(seed uint64) []float64 {
		if err := ManualSeed(seed); err != nil {
			t.Fatal(err)
		}
		x, err := ts.Randn([]int64{8}, gotch.Float, gotch.CPU)
		if err != nil {
			t.Fatal(err)
		}
		defer x.MustDrop()
		return x.Float64Values()
	}
	a, b, c := draw(7), draw(7), draw(8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different draws at %d: %v vs %v", i, a[i], b[i])
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 drew the same numbers")
	}
}

func TestSetNumThreads(t *testing.T) {
	for _, n := range []int{1, 2} {
		if err := SetNumThreads(n); err != nil {
			t.Fatal(err)
		}
		if got := NumThreads(); got != n {
			t.Fatalf("NumThreads() = %d after SetNumThreads(%d)", got, n)
		}
	}
	if err := SetNumThreads(0); err == nil {
		t.Fatal("SetNumThreads(0) gave no error")
	}
}

func TestCPURNGStateRestoresDraws(t *testing.T) {
	if err := ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	state, err := CPURNGState()
	if err != nil {
		t.Fatal(err)
	}
	draw := func() []float64 {
		x := ts.MustRand([]int64{6}, gotch.Float, gotch.CPU)
		defer x.MustDrop()
		return x.Float64Values()
	}
	a := draw()
	if err := SetCPURNGState(state); err != nil {
		t.Fatal(err)
	}
	b := draw()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d after restoring the state: %v, first time %v", i, b[i], a[i])
		}
	}
	if err := SetCPURNGState([]byte{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte state was accepted")
	}
}

// NoGrad must restore the grad mode it found: gotch once read the previous mode as garbage, which left
// autograd off after the first NoGrad and silently froze every parameter used later.
func TestNoGradRestoresGradMode(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := ts.GradSetEnabled(true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := NoGrad(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	x := ts.MustOnes([]int64{2}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, false)
	y := x.MustMul(x, false)
	if !y.MustRequiresGrad() {
		t.Fatal("autograd is off after NoGrad returned")
	}
	prev, err := ts.GradSetEnabled(true)
	if err != nil || !prev {
		t.Fatalf("GradSetEnabled reported the previous mode as %v (err %v), want true", prev, err)
	}
}
