package objectives

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Small tensor helpers the objectives share.

// NormEps is F.normalize's default eps: rows are divided by max(‖x‖₂, eps).
const NormEps = 1e-12

// Normalize is F.normalize(x, dim=1): x / max(‖x‖₂, 1e-12) per row.
func Normalize(x *ts.Tensor) *ts.Tensor {
	n := x.MustNormScalaroptDim(ts.FloatScalar(2), []int64{1}, true, false).MustClampMin(ts.FloatScalar(NormEps), true)
	out := x.MustDiv(n, false)
	n.MustDrop()
	return out
}

// Uniform initialises U(−bound, bound). gotch's own uniform init wraps its work in ts.NoGrad, which
// switches grad mode on whatever OS thread the goroutine is on at each end; this one touches no grad state.
type Uniform struct{ Bound float64 }

func (u Uniform) InitTensor(dims []int64, dev gotch.Device, dtype ...gotch.DType) *ts.Tensor {
	dt := gotch.DefaultDType
	if len(dtype) > 0 {
		dt = dtype[0]
	}
	return ts.MustRand(dims, dt, dev).MustMulScalar(ts.FloatScalar(2*u.Bound), true).MustSubScalar(ts.FloatScalar(u.Bound), true)
}

func (u Uniform) Set(x *ts.Tensor) {
	v := u.InitTensor(x.MustSize(), x.MustDevice(), x.DType())
	defer v.MustDrop()
	torch.NoGrad(func() error { x.Copy_(v); return nil })
}

var _ nn.Init = Uniform{}

// CrossEntropyDiagonal is the mean over rows i of −log softmax(scores_i)_i: each row's target is its own
// index (torch's CrossEntropyLoss with labels arange(b)). Low-precision scores are widened to Float first
// (LossDType). It panics on a libtorch error (callers Catch).
func CrossEntropyDiagonal(scores *ts.Tensor) *ts.Tensor {
	b := scores.MustSize()[0]
	target := ts.MustArange(ts.IntScalar(b), gotch.Int64, scores.MustDevice())
	defer target.MustDrop()
	logp := scores.MustLogSoftmax(1, LossDType(scores), false)
	return logp.MustNLLLoss(target, true)
}
