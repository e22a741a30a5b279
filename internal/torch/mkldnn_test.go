package torch

import (
	"fmt"
	"math"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Where libtorch loads a shared oneDNN (Debian's), the packed linears call it directly: a build without
// oneDNN's header (libdnnl-dev, which make setup installs) would run every linear through
// at::mkldnn_linear's per-call reorders and copies unnoticed.
func TestOneDNNCalledDirectly(t *testing.T) {
	if !HasMKLDNN() || !OneDNNLoaded() {
		t.Skip("libtorch loads no shared oneDNN (PyTorch's own builds link theirs in)")
	}
	if !MKLDNNDirect() {
		t.Fatal("libtorch loads oneDNN, but this build calls it through at::mkldnn_linear: install libdnnl-dev and rebuild")
	}
}

// The packed linear and feed-forward equal libtorch's own ops, with and without bias, for no row, one, a few and
// many, inputs of more than two dimensions, and two widths whose weights oneDNN lays out differently (AB16b64a and
// AB16b32a in float32 on an AVX-512 CPU):
//   - on float32 weights, within 1e-5;
//   - on bfloat16 weights, against libtorch's float32 product of x and w each rounded to bfloat16 (the sums in
//     float32, as oneDNN makes them): the linear within 1e-5, the feed-forward, whose GELU output is rounded to
//     bfloat16 too, within that activation's rounding.
func TestMKLDNNLinearEqualsLibtorchs(t *testing.T) {
	if !HasMKLDNN() {
		t.Skip("this libtorch has no oneDNN")
	}
	for _, c := range []struct {
		name   string
		bf16   bool
		ffnTol float64
	}{
		{"float32", false, 1e-5},
		// One GELU output a few ulps apart may round to the neighbouring bfloat16 (2⁻⁸ of it apart), times a
		// weight near 1/√96.
		{"bfloat16", true, 2e-3},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.bf16 && !MKLDNNDirect() {
				t.Skip("bfloat16 weights need oneDNN called directly")
			}
			if err := ManualSeed(7); err != nil {
				t.Fatal(err)
			}
			round := func(x *ts.Tensor) *ts.Tensor { // what oneDNN multiplies: x itself in float32
				if !c.bf16 {
					return x
				}
				return x.MustTotype(gotch.BFloat16, false).MustTotype(gotch.Float, true)
			}
			const in, hidden, out = 48, 96, 40
			// Weights scaled by 1/√fan-in, as initialised networks have them, keep every value near 1, where 1e-5
			// is float32's rounding over these sums.
			w1 := randn(hidden, in).MustDivScalar(ts.FloatScalar(math.Sqrt(in)), true)
			w2 := randn(out, hidden).MustDivScalar(ts.FloatScalar(math.Sqrt(hidden)), true)
			b1, b2 := randn(hidden), randn(out)
			p1, err := MKLDNNWeight(w1, c.bf16)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := MKLDNNWeight(w2, c.bf16)
			if err != nil {
				t.Fatal(err)
			}
			for _, shape := range [][]int64{{1, in}, {7, in}, {3, 100, in}} {
				x := randn(shape...)
				product := round(x).MustMatmul(round(w1).MustT(false), false)
				for _, bias := range []bool{true, false} {
					name := fmt.Sprintf("x %v, bias %v", shape, bias)
					b, want := (*ts.Tensor)(nil), product
					if bias {
						b, want = b1, product.MustAdd(b1, false)
					}
					got := MKLDNNLinear(x, p1, b)
					if got.DType() != gotch.Float {
						t.Errorf("%s: the linear returns %v, want float32", name, got.DType())
					}
					if d := maxAbsDiff(got, want); d > 1e-5 {
						t.Errorf("%s: linear differs from libtorch's by %.3g", name, d)
					}
				}
				inner := round(product.MustAdd(b1, false).MustGelu("none", true))
				want := inner.MustMatmul(round(w2).MustT(false), false).MustAdd(b2, true)
				if d := maxAbsDiff(MKLDNNFeedForward(x, p1, b1, p2, b2), want); d > c.ffnTol {
					t.Errorf("x %v: feed-forward differs from libtorch's by %.3g", shape, d)
				}
			}
			if got := MKLDNNLinear(randn(0, in), p1, b1).MustSize(); len(got) != 2 || got[0] != 0 || got[1] != hidden {
				t.Errorf("no rows: the result is %v, want [0 %d]", got, hidden)
			}
		})
	}
}

// CPUAttention equals libtorch's composite attention (matmul, scale, additive mask, softmax, matmul) within
// 1e-5: with and without a mask, rows padded by different amounts, one token and odd lengths, one head and
// several, up to 16 tokens (the BLAS's GEMMs) and past that (oneDNN's matmul, where the build calls it), and
// rows long enough to be taken in chunks.
func TestCPUAttentionEqualsLibtorchs(t *testing.T) {
	if !HasCPUAttention() {
		t.Skip("the BLAS under libtorch exports no sgemm_")
	}
	if err := ManualSeed(11); err != nil {
		t.Fatal(err)
	}
	lowest := float32(-math.MaxFloat32)
	for _, c := range []struct {
		name         string
		rows, tokens int64
		heads, width int64   // the heads and each head's width
		lengths      []int64 // each row's real tokens; nil: no mask
	}{
		{"one token", 1, 1, 1, 8, nil},
		{"no mask", 3, 7, 2, 16, nil},
		{"padded rows", 4, 9, 4, 8, []int64{9, 1, 5, 8}},
		{"one head, padded", 2, 33, 1, 64, []int64{20, 33}},
		{"past 16 tokens, no mask", 2, 40, 4, 16, nil},
		{"past 16 tokens, padded", 3, 24, 3, 8, []int64{24, 3, 17}},
		{"rows in two chunks", 3, 2048, 1, 8, []int64{2048, 1000, 7}}, // 2048² scores a row: two rows a chunk
	} {
		t.Run(c.name, func(t *testing.T) {
			hidden := c.heads * c.width
			qkv := randn(c.rows, c.tokens, 3*hidden)
			var mask *ts.Tensor
			if c.lengths != nil {
				add := make([]float32, c.rows*c.tokens)
				for r, n := range c.lengths {
					for j := n; j < c.tokens; j++ {
						add[int64(r)*c.tokens+j] = lowest
					}
				}
				mask = ts.MustOfSlice(add).MustView([]int64{c.rows, 1, 1, c.tokens}, true)
			}
			split := qkv.MustView([]int64{c.rows, c.tokens, 3, c.heads, c.width}, false).MustPermute([]int64{2, 0, 3, 1, 4}, true)
			q, k, v := split.MustSelect(0, 0, false), split.MustSelect(0, 1, false), split.MustSelect(0, 2, false)
			scores := q.MustMatmul(k.MustTranspose(-1, -2, false), false).MustDivScalar(ts.FloatScalar(math.Sqrt(float64(c.width))), true)
			if mask != nil {
				scores = scores.MustAdd(mask, true)
			}
			want := scores.MustSoftmax(-1, gotch.Float, true).MustMatmul(v, true).
				MustTranspose(1, 2, true).MustReshape([]int64{c.rows, c.tokens, hidden}, true)
			got := CPUAttention(qkv, mask, c.heads)
			if d := maxAbsDiff(got, want); d > 1e-5 {
				t.Errorf("differs from libtorch's attention by %.3g", d)
			}
		})
	}
}

// MKLDNNLayerNorm equals libtorch's LayerNorm within 1e-5 with a weight and bias that are not the identity, for
// one row, many, 3-D input, two widths and two epsilons.
func TestMKLDNNLayerNormEqualsLibtorchs(t *testing.T) {
	if err := ManualSeed(5); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shape []int64
		eps   float64
	}{{[]int64{1, 96}, 1e-12}, {[]int64{3, 7, 256}, 1e-12}, {[]int64{50, 96}, 1e-5}} {
		width := c.shape[len(c.shape)-1]
		x := randn(c.shape...).MustMulScalar(ts.FloatScalar(3), true).MustAddScalar(ts.FloatScalar(1), true)
		w := randn(width)
		b := randn(width)
		want := ts.MustLayerNorm(x, []int64{width}, w, b, c.eps, false)
		got := MKLDNNLayerNorm(x, w, b, c.eps)
		if d := maxAbsDiff(got, want); d > 1e-5 {
			t.Errorf("x %v, eps %g: differs from libtorch's LayerNorm by %.3g", c.shape, c.eps, d)
		}
		if g, w := got.MustSize(), x.MustSize(); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("x %v: the result is %v", c.shape, g)
		}
	}
}

func randn(dims ...int64) *ts.Tensor { return ts.MustRandn(dims, gotch.Float, gotch.CPU) }

func maxAbsDiff(a, b *ts.Tensor) float64 {
	return a.MustSub(b, false).MustAbs(true).MustMax(true).Float64Values()[0]
}
