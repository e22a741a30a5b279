// Package tensors holds the tensor arithmetic the objectives share: row normalisation, the diagonal
// cross-entropy of in-batch contrastive losses, a uniform initialiser for heads, a loss's fp32 arithmetic
// under mixed precision, and the gathering of a global batch across data-parallel ranks. Its functions take
// and give torch.Tensor, whose ops panic on a libtorch error and leave their intermediates to the scope they
// run in (torch.Scoped, FP32).
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

// Unit is F.normalize(x, dim=-1): x / max(‖x‖₂, 1e-12) along the last dimension.
func Unit(x torch.Tensor) torch.Tensor { return x.Div(x.Norm(-1).ClampMin(NormEps)) }

// Normalize is Unit for a gotch tensor [N,d] outside a loss; the caller drops the result. It panics on a
// libtorch error.
func Normalize(x *ts.Tensor) *ts.Tensor {
	var out *ts.Tensor
	if err := torch.Scoped("normalize", func(keep torch.Keep) error { out = keep(Unit(torch.Of(x))); return nil }); err != nil {
		panic(err)
	}
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
	var out *ts.Tensor
	err := torch.Scoped("uniform init", func(keep torch.Keep) error {
		r, err := ts.Rand(dims, dt, dev)
		if err != nil {
			return err
		}
		out = keep(torch.Of(r).MulScalar(2 * u.Bound).SubScalar(u.Bound))
		return nil
	})
	if err != nil {
		panic(err) // nn.Init has no error to return; its callers (MustNewVar, NewVar) Catch
	}
	return out
}

func (u Uniform) Set(x *ts.Tensor) {
	v := torch.Of(x)
	err := torch.Scoped("uniform init", func(torch.Keep) error {
		draw := u.InitTensor(v.Size(), v.Device(), x.DType())
		return torch.NoGrad(func() error { x.Copy_(draw); return nil })
	})
	if err != nil {
		panic(err)
	}
}

var _ nn.Init = Uniform{}

// CrossEntropyDiagonal is the mean over rows i of −log softmax(scores_i)_i: each row's target is its own
// index (torch's CrossEntropyLoss with labels arange(b)). Low-precision scores are widened to Float first
// (LossDType).
func CrossEntropyDiagonal(scores torch.Tensor) torch.Tensor {
	target := torch.Arange(scores.Size()[0], gotch.Int64, scores.Device())
	return scores.LogSoftmax(1, LossDType(scores)).NLLLoss(target)
}

// Mixed precision. Under train.precision bf16 the trainer runs Loss under autocast: the encoder's matmuls
// run in bf16 and its outputs may arrive in bf16. A loss itself is computed in fp32, as torch.autocast's
// own policy keeps log-softmax, NLL, cross-entropy and the reductions in fp32: its inputs are widened with
// Upcast and its arithmetic runs in FP32, with autocast off, since autocast would cast the inputs of a
// similarity matmul back to bf16 whatever their dtype. Without autocast both cost nothing.

// Upcast is x as Float when it is a low-precision float (BFloat16, Half), and x itself otherwise: Float
// and Double stay as they are (the float64 tests keep their precision). The cast is in the graph.
func Upcast(x torch.Tensor) torch.Tensor {
	if dt := x.DType(); dt == gotch.BFloat16 || dt == gotch.Half {
		return x.Cast(gotch.Float)
	}
	return x
}

// LossDType is the dtype a loss reduces in (log-softmax, sums, means) for an input of x's dtype: Float for
// bf16 and fp16, x's own otherwise.
func LossDType(x torch.Tensor) gotch.DType {
	if dt := x.DType(); dt == gotch.BFloat16 || dt == gotch.Half {
		return gotch.Float
	}
	return x.DType()
}

// FP32 runs fn, the arithmetic of a loss on Upcast inputs, in torch.Scoped (what names its errors, keep
// hands its results out) with autocast off on the current OS thread.
func FP32(what string, fn func(keep torch.Keep) error) error {
	return torch.Scoped(what, func(keep torch.Keep) error {
		return torch.WithoutAutocast(func() error { return fn(keep) })
	})
}

// Gather stacks every data-parallel rank's rows (objectives.Gather); nil means one process.
type Gather = func(*ts.Tensor) (*ts.Tensor, error)

// GatherViews gathers two row-aligned views ([n,d] each, row i of a paired with row i of b) into the global
// batch's ([Wn,d] each, still aligned). With no gather it returns them as they are.
func GatherViews(g Gather, a, b torch.Tensor) (ga, gb torch.Tensor, err error) {
	if g == nil {
		return a, b, nil
	}
	if ga, err = gather(g, a); err != nil {
		return ga, gb, err
	}
	gb, err = gather(g, b)
	return ga, gb, err
}

// GatherPairs turns this rank's [2n,d] pair features z (n anchors, then their n partners) and optional
// pair marks into the global batch's: [2Wn,d] with all anchors first, in rank order, then all partners,
// and the global number of pairs. With no gather it returns its inputs.
func GatherPairs(g Gather, z torch.Tensor, n int64, marks torch.Tensor) (all torch.Tensor, pairs int64, allMarks torch.Tensor, err error) {
	if g == nil {
		return z, n, marks, nil
	}
	anchors, partners, err := GatherViews(g, z.Narrow(0, 0, n), z.Narrow(0, n, n))
	if err != nil {
		return all, 0, allMarks, err
	}
	all = torch.Cat(0, anchors, partners)
	if !marks.Nil() {
		if allMarks, err = gather(g, marks); err != nil {
			return all, 0, allMarks, err
		}
	}
	return all, all.Size()[0] / 2, allMarks, nil
}

func gather(g Gather, x torch.Tensor) (torch.Tensor, error) {
	y, err := g(x.Raw())
	if err != nil {
		return torch.Tensor{}, fmt.Errorf("global batch: %w", err)
	}
	return torch.Of(y), nil
}
