// Package tensors holds the tensor arithmetic the objectives share: row normalisation, the diagonal
// cross-entropy of in-batch contrastive losses, a uniform initialiser for heads, a loss's fp32 arithmetic
// under mixed precision, and the gathering of a global batch across data-parallel ranks.
package tensors

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

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

// Mixed precision. Under train.precision bf16 the trainer runs Loss under autocast: the encoder's matmuls
// run in bf16 and its outputs may arrive in bf16. A loss itself is computed in fp32, as torch.autocast's
// own policy keeps log-softmax, NLL, cross-entropy and the reductions in fp32: its inputs are widened with
// Upcast and its arithmetic runs in FP32, with autocast off, since autocast would cast the inputs of a
// similarity matmul back to bf16 whatever their dtype. Without autocast both cost nothing.

// Upcast returns x as Float when it is a low-precision float (BFloat16, Half) and a new handle to x
// otherwise: Float and Double stay as they are (the float64 tests keep their precision). The cast is in
// the graph. The caller drops the result. It panics on a libtorch error (callers Catch).
func Upcast(x *ts.Tensor) *ts.Tensor {
	if dt := x.DType(); dt == gotch.BFloat16 || dt == gotch.Half {
		return x.MustTotype(gotch.Float, false)
	}
	return x.MustShallowClone()
}

// LossDType is the dtype a loss reduces in (log-softmax, sums, means) for an input of x's dtype: Float for
// bf16 and fp16, x's own otherwise.
func LossDType(x *ts.Tensor) gotch.DType {
	if dt := x.DType(); dt == gotch.BFloat16 || dt == gotch.Half {
		return gotch.Float
	}
	return x.DType()
}

// FP32 runs fn, the arithmetic of a loss on Upcast inputs, with autocast off on the current OS thread,
// turning a panic inside into an error named by what (torch.Catch).
func FP32(what string, fn func() error) error {
	return torch.Catch(what, func() error { return torch.WithoutAutocast(fn) })
}

// GatherViews gathers two row-aligned views ([n,d] each, row i of a paired with row i of b) into the global
// batch's ([Wn,d] each, still aligned). With no gather it returns them as they are; drop frees what it made.
func GatherViews(g func(*ts.Tensor) (*ts.Tensor, error), a, b *ts.Tensor) (ga, gb *ts.Tensor, drop func(), err error) {
	if g == nil {
		return a, b, func() {}, nil
	}
	if ga, err = g(a); err != nil {
		return nil, nil, nil, fmt.Errorf("global batch: %w", err)
	}
	if gb, err = g(b); err != nil {
		ga.MustDrop()
		return nil, nil, nil, fmt.Errorf("global batch: %w", err)
	}
	return ga, gb, func() { torch.Drop(ga, gb) }, nil
}

// GatherPairs turns this rank's [2n,d] pair features z (n anchors, then their n partners) and optional
// pair marks into the global batch's: [2Wn,d] with all anchors first, in rank order, then all partners.
// With no gather it returns its inputs.
func GatherPairs(g func(*ts.Tensor) (*ts.Tensor, error), z *ts.Tensor, n int64, marks *ts.Tensor) (*ts.Tensor, int64, *ts.Tensor, func(), error) {
	if g == nil {
		return z, n, marks, func() {}, nil
	}
	var all, allMarks *ts.Tensor
	err := torch.Catch("gather pairs", func() error {
		anchors := z.MustNarrow(0, 0, n, false)
		partners := z.MustNarrow(0, n, n, false)
		defer torch.Drop(anchors, partners)
		ga, gp, drop, err := GatherViews(g, anchors, partners)
		if err != nil {
			return err
		}
		all = ts.MustCat([]*ts.Tensor{ga, gp}, 0)
		drop()
		if marks != nil {
			if allMarks, err = g(marks); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		torch.Drop(all, allMarks)
		return nil, 0, nil, nil, fmt.Errorf("global batch: %w", err)
	}
	return all, all.MustSize()[0] / 2, allMarks, func() { torch.Drop(all, allMarks) }, nil
}
