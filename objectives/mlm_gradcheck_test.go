package objectives

import (
	"math"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// doubleLeaf makes a float64 leaf tensor of shape from values, tracking gradients.
func doubleLeaf(vals []float64, shape []int64) *ts.Tensor {
	x := ts.MustOfSlice(vals).MustView(shape, true)
	x.MustRequiresGrad_(true)
	return x
}

// checkGradient compares the gradient of loss(x) at x (backward) with central finite differences
// (float64, step h), for every entry of x.
func checkGradient(t *testing.T, x *ts.Tensor, loss func(x *ts.Tensor) *ts.Tensor) {
	t.Helper()
	gradOn(t)
	l := loss(x)
	l.MustBackward()
	grad := x.MustGrad(false).Float64Values()
	l.MustDrop()
	base := x.MustDetach(false).Float64Values()
	shape := x.MustSize()
	const h = 1e-6
	at := func(vals []float64) float64 {
		y := ts.MustOfSlice(vals).MustView(shape, true)
		v := loss(y)
		out := v.Float64Values()[0]
		dropAll(v, y)
		return out
	}
	worst := 0.0
	for i := range base {
		p := append([]float64(nil), base...)
		p[i] += h
		m := append([]float64(nil), base...)
		m[i] -= h
		num := (at(p) - at(m)) / (2 * h)
		worst = math.Max(worst, math.Abs(num-grad[i])/math.Max(1, math.Abs(num)))
	}
	t.Logf("finite differences: worst relative gradient error %.3g over %d entries", worst, len(base))
	if worst > 1e-6 {
		t.Errorf("gradient differs from finite differences by %g", worst)
	}
}

func dropAll(xs ...*ts.Tensor) {
	for _, x := range xs {
		x.MustDrop()
	}
}

// withDouble builds what fn builds with float64 as libtorch's default dtype.
func withDouble(fn func()) {
	prev := gotch.SetDefaultDType(gotch.Double)
	defer gotch.SetDefaultDType(prev)
	fn()
}

// pseudo returns n reproducible values in (−scale, scale).
func pseudo(n int, seed uint64, scale float64) []float64 {
	out := make([]float64, n)
	s := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		out[i] = (float64(s%20001)/10000 - 1) * scale
	}
	return out
}
