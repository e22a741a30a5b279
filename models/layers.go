package models

import (
	"fmt"
	"math"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// params creates parameters in a VarStore under HuggingFace names and remembers them by name, so that
// loading and saving walk one map. New parameters get HuggingFace's initialisation: weights N(0, std),
// biases 0, LayerNorm 1 and 0.
type params struct {
	root   *nn.Path
	byName map[string]*ts.Tensor
	std    float64
}

func (p *params) path(name string) *nn.Path {
	path := p.root
	for _, part := range strings.Split(name, ".") {
		path = path.Sub(part)
	}
	return path
}

func (p *params) add(name string, shape []int64, init nn.Init) *ts.Tensor {
	dir, leaf := name[:strings.LastIndex(name, ".")], name[strings.LastIndex(name, ".")+1:]
	x := p.path(dir).MustNewVar(leaf, shape, init)
	p.byName[name] = x
	return x
}

func (p *params) normal(name string, shape ...int64) *ts.Tensor {
	return p.add(name, shape, nn.NewRandnInit(0, p.std))
}

func (p *params) constant(name string, v float64, shape ...int64) *ts.Tensor {
	return p.add(name, shape, nn.NewConstInit(v))
}

// linear is y = x·Wᵀ + b with W of shape [out, in], as torch.nn.Linear stores it.
type linear struct{ w, b *ts.Tensor }

func (p *params) linear(name string, in, out int64, bias bool) linear {
	l := linear{w: p.normal(name+".weight", out, in)}
	if bias {
		l.b = p.constant(name+".bias", 0, out)
	}
	return l
}

func (l linear) forward(x *ts.Tensor) *ts.Tensor { return ts.MustLinear(x, l.w, l.b) }

// stackedLinears creates linears of one size under names, each with the weight and bias of a fresh linear
// (the same random draws, in the same order), whose weights are consecutive rows of one [n·out, in] tensor
// and whose biases consecutive parts of one [n·out] tensor, in the order of names. Each stays a parameter of
// its own under its checkpoint name, for loading, saving, the optimiser and the gradient buckets, while
// torch.JoinRows sees the n as one weight without a copy, so one GEMM serves them all.
func (p *params) stackedLinears(names []string, in, out int64) []linear {
	n := int64(len(names))
	dev := p.root.Device()
	weights := ts.MustZeros([]int64{n * out, in}, gotch.DefaultDType, dev)
	biases := ts.MustZeros([]int64{n * out}, gotch.DefaultDType, dev)
	defer torch.Drop(weights, biases)
	ls := make([]linear, n)
	for i, name := range names {
		ls[i] = linear{
			w: p.rows(name+".weight", weights, int64(i)*out, out, nn.NewRandnInit(0, p.std)),
			b: p.rows(name+".bias", biases, int64(i)*out, out, nn.NewConstInit(0)),
		}
	}
	return ls
}

// rows adds rows [start, start+n) of base as the parameter name, initialised as a new variable would be.
func (p *params) rows(name string, base *ts.Tensor, start, n int64, init nn.Init) *ts.Tensor {
	view := base.MustNarrow(0, start, n, false)
	defer view.MustDrop()
	fresh := init.InitTensor(view.MustSize(), view.MustDevice(), view.DType())
	defer fresh.MustDrop()
	torch.NoGrad(func() error { view.Copy_(fresh); return nil })
	dir, leaf := name[:strings.LastIndex(name, ".")], name[strings.LastIndex(name, ".")+1:]
	x := p.path(dir).MustAdd(leaf, view, true) // the same tensor, now a leaf that requires its gradient
	p.byName[name] = x
	return x
}

type layerNorm struct {
	w, b  *ts.Tensor
	shape []int64 // [dim], the normalised shape: kept rather than asked of w on every call
	eps   float64
}

func (p *params) layerNorm(name string, dim int64, eps float64) layerNorm {
	return layerNorm{w: p.constant(name+".weight", 1, dim), b: p.constant(name+".bias", 0, dim), shape: []int64{dim}, eps: eps}
}

// forward normalises x over its last dimension. An x of another dtype than the weights (bf16 from a head's
// dense layer under autocast) is cast to theirs first, as CUDA autocast's fp32 policy for layer_norm does;
// CPU autocast (libtorch 1.13) leaves layer_norm alone, and its kernel refuses mixed dtypes.
func (n layerNorm) forward(x *ts.Tensor) *ts.Tensor {
	if x.DType() != n.w.DType() {
		x = x.MustTotype(n.w.DType(), false)
		defer x.MustDrop()
	}
	return ts.MustLayerNorm(x, n.shape, n.w, n.b, n.eps, false)
}

// embedding creates a lookup table; the padding row starts at zero, as in torch.nn.Embedding(padding_idx).
func (p *params) embedding(name string, rows, dim int64, padRow int64) *ts.Tensor {
	w := p.normal(name+".weight", rows, dim)
	if padRow >= 0 && padRow < rows {
		torch.NoGrad(func() error { w.MustNarrow(0, padRow, 1, false).MustFill_(ts.FloatScalar(0)); return nil })
	}
	return w
}

// activation returns the function config.json's hidden_act names.
func activation(name string) (func(*ts.Tensor) *ts.Tensor, error) {
	switch geluKind(name) {
	case torch.ExactGELU:
		return func(x *ts.Tensor) *ts.Tensor { return x.MustGelu("none", false) }, nil
	case torch.TanhGELU:
		return func(x *ts.Tensor) *ts.Tensor { return x.MustGelu("tanh", false) }, nil
	}
	switch name {
	case "relu":
		return func(x *ts.Tensor) *ts.Tensor { return x.MustRelu(false) }, nil
	case "silu", "swish":
		return func(x *ts.Tensor) *ts.Tensor { return x.MustSilu(false) }, nil
	}
	return nil, fmt.Errorf("activation %q is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu)", name)
}

// geluKind is the GELU config.json's hidden_act names, NoGELU for another activation.
func geluKind(name string) torch.GELUKind {
	switch name {
	case "gelu":
		return torch.ExactGELU
	case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
		return torch.TanhGELU
	}
	return torch.NoGELU
}

// sinusoidal fills a position table with DistilBERT's fixed sinusoids (sinusoidal_pos_embds = true).
func sinusoidal(rows, dim int64) []float32 {
	out := make([]float32, rows*dim)
	for pos := int64(0); pos < rows; pos++ {
		for j := int64(0); j < dim; j++ {
			angle := float64(pos) / math.Pow(10000, float64(2*(j/2))/float64(dim))
			if j%2 == 0 {
				out[pos*dim+j] = float32(math.Sin(angle))
			} else {
				out[pos*dim+j] = float32(math.Cos(angle))
			}
		}
	}
	return out
}
