package torch

import (
	"errors"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Tensor is a tensor in a loss's arithmetic: its methods are libtorch's ops, each making a new tensor and
// leaving its operands as they are, so that a loss reads like its equation (z.Mm(z.T()).DivScalar(τ)) with
// no lifetimes in between. A libtorch error panics; Scoped turns it into an error at the loss's boundary and
// frees every intermediate at once. Use it only inside Scoped (or another Scope): outside one, the
// intermediates wait for Go's finalizers.
type Tensor struct{ t *ts.Tensor }

// Of is x as a Tensor; x stays its owner's.
func Of(x *ts.Tensor) Tensor { return Tensor{x} }

// Raw is the gotch tensor under x, for the APIs that take one (the model, a batch).
func (x Tensor) Raw() *ts.Tensor { return x.t }

// Nil reports whether x holds no tensor.
func (x Tensor) Nil() bool { return x.t == nil }

// Keep hands a tensor made inside Scoped to Scoped's caller: it returns the gotch handle, which outlives the
// scope and which the caller drops.
type Keep func(x Tensor) *ts.Tensor

// Scoped runs fn inside a new Scope and frees, when fn returns, every tensor fn made on this goroutine except
// those it handed to keep; a panic inside fn (a libtorch error, Tensor's ops panic) comes back as an error
// naming what. On an error the kept tensors are freed too, so the caller owns results only when Scoped
// returns nil. A kept tensor fn did not make (an input passed through) is handed out as a new handle to the
// same storage, so the caller always owns what it is given. Scopes nest: inside another scope, the kept
// tensors go to it, as Scope.Keep does.
func Scoped(what string, fn func(keep Keep) error) (err error) {
	s := NewScope()
	var kept []*ts.Tensor
	keep := func(x Tensor) *ts.Tensor {
		if x.t == nil {
			return nil
		}
		if !s.holds(x.t) {
			x = must(x.t.ShallowClone()) // made in s, so it is kept below like the rest
		}
		kept = append(kept, x.t)
		return x.t
	}
	err = Catch(what, func() error { return fn(keep) })
	if err == nil {
		s.Keep(kept...)
	}
	return errors.Join(err, s.Free())
}

// holds reports whether x was made while s was its goroutine's innermost scope.
func (s *Scope) holds(x *ts.Tensor) bool {
	for i := len(s.made) - 1; i >= 0; i-- {
		if s.made[i] == x {
			return true
		}
	}
	return false
}

// must panics on a libtorch error, as gotch's Must* functions do, and wraps the result.
func must(x *ts.Tensor, err error) Tensor {
	if err != nil {
		panic(err)
	}
	return Tensor{x}
}

func flt(v float64) *ts.Scalar { return ts.FloatScalar(v) }

// Shape and type.

// Size is x's shape.
func (x Tensor) Size() []int64 {
	s, err := x.t.Size()
	if err != nil {
		panic(err)
	}
	return s
}

// DType is x's element type.
func (x Tensor) DType() gotch.DType { return x.t.DType() }

// Device is the device x lives on.
func (x Tensor) Device() gotch.Device {
	d, err := x.t.Device()
	if err != nil {
		panic(err)
	}
	return d
}

// Constructors.

// Cat stacks xs along dim (torch.cat).
func Cat(dim int64, xs ...Tensor) Tensor {
	raw := make([]*ts.Tensor, len(xs))
	for i, x := range xs {
		raw[i] = x.t
	}
	return must(ts.Cat(raw, dim))
}

// Eye is the n×n identity of dtype on dev.
func Eye(n int64, dtype gotch.DType, dev gotch.Device) Tensor { return must(ts.Eye(n, dtype, dev)) }

// Arange is 0, 1, …, n−1 of dtype on dev.
func Arange(n int64, dtype gotch.DType, dev gotch.Device) Tensor {
	return must(ts.Arange(ts.IntScalar(n), dtype, dev))
}

// Zeros is a tensor of zeros of the shape, dtype and device given.
func Zeros(shape []int64, dtype gotch.DType, dev gotch.Device) Tensor {
	return must(ts.Zeros(shape, dtype, dev))
}

// Scalar is the 0-dim tensor holding v, of dtype on dev.
func Scalar(v float64, dtype gotch.DType, dev gotch.Device) Tensor {
	// gotch cannot pass an empty size: a [1] filled, then squeezed.
	return must(ts.Full([]int64{1}, flt(v), dtype, dev)).Squeeze()
}

// Shape: views and copies that move elements.

// T is the transpose of a matrix.
func (x Tensor) T() Tensor { return must(x.t.T(false)) }

// View is x reshaped to shape, sharing its storage.
func (x Tensor) View(shape ...int64) Tensor { return must(x.t.View(shape, false)) }

// Unsqueeze inserts a dimension of size 1 at dim.
func (x Tensor) Unsqueeze(dim int64) Tensor { return must(x.t.Unsqueeze(dim, false)) }

// Squeeze removes every dimension of size 1.
func (x Tensor) Squeeze() Tensor { return must(x.t.Squeeze(false)) }

// SqueezeDim removes dimension dim, of size 1.
func (x Tensor) SqueezeDim(dim int64) Tensor { return must(x.t.SqueezeDim(dim, false)) }

// Permute reorders the dimensions.
func (x Tensor) Permute(dims ...int64) Tensor { return must(x.t.Permute(dims, false)) }

// Narrow is the slice [start, start+n) of dimension dim.
func (x Tensor) Narrow(dim, start, n int64) Tensor { return must(x.t.Narrow(dim, start, n, false)) }

// Select is index i of dimension dim, that dimension removed.
func (x Tensor) Select(dim, i int64) Tensor { return must(x.t.Select(dim, i, false)) }

// Diagonal is the diagonal offset by offset of dimensions d1 and d2 (torch.diagonal).
func (x Tensor) Diagonal(offset, d1, d2 int64) Tensor {
	return must(x.t.Diagonal(offset, d1, d2, false))
}

// Repeat tiles x reps times along each dimension.
func (x Tensor) Repeat(reps ...int64) Tensor { return must(x.t.Repeat(reps, false)) }

// IndexSelect is the entries of dimension dim at index.
func (x Tensor) IndexSelect(dim int64, index Tensor) Tensor {
	return must(x.t.IndexSelect(dim, index.t, false))
}

// Cast is x as dtype (in the graph).
func (x Tensor) Cast(dtype gotch.DType) Tensor { return must(x.t.Totype(dtype, false)) }

// To is x on dev.
func (x Tensor) To(dev gotch.Device) Tensor { return must(x.t.To(dev, false)) }

// Detach is x out of the graph: no gradient flows back through it.
func (x Tensor) Detach() Tensor { return must(x.t.Detach(false)) }

// Arithmetic, elementwise with broadcasting.

func (x Tensor) Add(y Tensor) Tensor { return must(x.t.Add(y.t, false)) }
func (x Tensor) Sub(y Tensor) Tensor { return must(x.t.Sub(y.t, false)) }
func (x Tensor) Mul(y Tensor) Tensor { return must(x.t.Mul(y.t, false)) }
func (x Tensor) Div(y Tensor) Tensor { return must(x.t.Div(y.t, false)) }

func (x Tensor) AddScalar(v float64) Tensor { return must(x.t.AddScalar(flt(v), false)) }
func (x Tensor) SubScalar(v float64) Tensor { return must(x.t.SubScalar(flt(v), false)) }
func (x Tensor) MulScalar(v float64) Tensor { return must(x.t.MulScalar(flt(v), false)) }
func (x Tensor) DivScalar(v float64) Tensor { return must(x.t.DivScalar(flt(v), false)) }

// ClampMin is max(x, v).
func (x Tensor) ClampMin(v float64) Tensor { return must(x.t.ClampMin(flt(v), false)) }

func (x Tensor) Square() Tensor   { return must(x.t.Square(false)) }
func (x Tensor) Softplus() Tensor { return must(x.t.Softplus(false)) }
func (x Tensor) Relu() Tensor     { return must(x.t.Relu(false)) }
func (x Tensor) Tanh() Tensor     { return must(x.t.Tanh(false)) }
func (x Tensor) Abs() Tensor      { return must(x.t.Abs(false)) }

// Comparisons and masks.

// Eq is x == v, as bool.
func (x Tensor) Eq(v float64) Tensor { return must(x.t.Eq(flt(v), false)) }

// Gt is x > v, as bool.
func (x Tensor) Gt(v float64) Tensor { return must(x.t.Gt(flt(v), false)) }

// GtTensor is x > y, as bool.
func (x Tensor) GtTensor(y Tensor) Tensor { return must(x.t.GtTensor(y.t, false)) }

// Not is the logical negation of x.
func (x Tensor) Not() Tensor { return must(x.t.LogicalNot(false)) }

// MaskedFill is x with v where mask is true.
func (x Tensor) MaskedFill(mask Tensor, v float64) Tensor {
	return must(x.t.MaskedFill(mask.t, flt(v), false))
}

// Products.

// Mm is the matrix product x·y.
func (x Tensor) Mm(y Tensor) Tensor { return must(x.t.Mm(y.t, false)) }

// Bmm is the batched matrix product.
func (x Tensor) Bmm(y Tensor) Tensor { return must(x.t.Bmm(y.t, false)) }

// Matmul is torch.matmul (broadcasting batched product).
func (x Tensor) Matmul(y Tensor) Tensor { return must(x.t.Matmul(y.t, false)) }

// Linear is torch.nn.functional.linear, x·Wᵀ + b.
func Linear(x, w, b Tensor) Tensor { return must(ts.Linear(x.t, w.t, b.t)) }

// CosineSimilarity is the cosine of x and y along dim, each norm at least eps.
func CosineSimilarity(x, y Tensor, dim int64, eps float64) Tensor {
	return must(ts.CosineSimilarity(x.t, y.t, dim, eps))
}

// Reductions. dtype is the type they accumulate and return in.

// Sum is the sum of every entry.
func (x Tensor) Sum(dtype gotch.DType) Tensor { return must(x.t.Sum(dtype, false)) }

// SumDim is the sum over dimension dim, kept as size 1 with keepdim.
func (x Tensor) SumDim(dim int64, keepdim bool, dtype gotch.DType) Tensor {
	return must(x.t.SumDimIntlist([]int64{dim}, keepdim, dtype, false))
}

// Mean is the mean of every entry.
func (x Tensor) Mean(dtype gotch.DType) Tensor { return must(x.t.Mean(dtype, false)) }

// Amax is the maximum over dimension dim.
func (x Tensor) Amax(dim int64) Tensor { return must(x.t.Amax([]int64{dim}, false, false)) }

// Logsumexp is log Σ exp over dimension dim.
func (x Tensor) Logsumexp(dim int64) Tensor { return must(x.t.Logsumexp([]int64{dim}, false, false)) }

// Norm is the L2 norm over dimension dim, kept as size 1.
func (x Tensor) Norm(dim int64) Tensor {
	return must(x.t.NormScalaroptDim(flt(2), []int64{dim}, true, false))
}

// Softmax is the softmax over dim, computed in dtype.
func (x Tensor) Softmax(dim int64, dtype gotch.DType) Tensor {
	return must(x.t.Softmax(dim, dtype, false))
}

// LogSoftmax is the log-softmax over dim, computed in dtype.
func (x Tensor) LogSoftmax(dim int64, dtype gotch.DType) Tensor {
	return must(x.t.LogSoftmax(dim, dtype, false))
}

// NLLLoss is the mean over rows of −x[i, target[i]] (torch.nn.functional.nll_loss).
func (x Tensor) NLLLoss(target Tensor) Tensor { return must(x.t.NLLLoss(target.t, false)) }

// Term runs fn, one term of a loss, in a scope of its own nested in the caller's: what fn makes besides its
// result is freed as soon as it returns, not when the loss's scope ends, which bounds the memory a loss
// holds at once where a term's intermediates are large. The result goes to the enclosing scope. A panic
// inside fn passes through (after the term's tensors are freed).
func Term(fn func() Tensor) Tensor {
	s := NewScope()
	defer s.Free() // innermost, on this goroutine: Free cannot fail here
	x := fn()
	s.Keep(x.t)
	return x
}
