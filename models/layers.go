package models

import (
	"fmt"
	"math"
	"strings"

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
	switch name {
	case "gelu":
		return func(x *ts.Tensor) *ts.Tensor { return x.MustGelu("none", false) }, nil
	case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
		return func(x *ts.Tensor) *ts.Tensor { return x.MustGelu("tanh", false) }, nil
	case "relu":
		return func(x *ts.Tensor) *ts.Tensor { return x.MustRelu(false) }, nil
	case "silu", "swish":
		return func(x *ts.Tensor) *ts.Tensor { return x.MustSilu(false) }, nil
	}
	return nil, fmt.Errorf("activation %q is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu)", name)
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
