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

// The packed linear and feed-forward equal libtorch's own ops within 1e-5, with and without bias, for one row,
// a few and many, inputs of more than two dimensions, and two widths whose weights oneDNN lays out differently
// (AB16b64a and AB16b32a on an AVX-512 CPU).
func TestMKLDNNLinearEqualsLibtorchs(t *testing.T) {
	if !HasMKLDNN() {
		t.Skip("this libtorch has no oneDNN")
	}
	if err := ManualSeed(7); err != nil {
		t.Fatal(err)
	}
	gen := func(dims ...int64) *ts.Tensor { return ts.MustRandn(dims, gotch.Float, gotch.CPU) }
	worst := func(a, b *ts.Tensor) float64 {
		return a.MustSub(b, false).MustAbs(true).MustMax(true).Float64Values()[0]
	}
	const in, hidden, out = 48, 96, 40
	// Weights scaled by 1/√fan-in, as initialised networks have them, keep every value near 1, where 1e-5 is
	// float32's rounding over these sums.
	w1 := gen(hidden, in).MustDivScalar(ts.FloatScalar(math.Sqrt(in)), true)
	w2 := gen(out, hidden).MustDivScalar(ts.FloatScalar(math.Sqrt(hidden)), true)
	b1, b2 := gen(hidden), gen(out)
	p1, err := MKLDNNWeight(w1)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := MKLDNNWeight(w2)
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range [][]int64{{1, in}, {7, in}, {3, 100, in}} {
		x := gen(shape...)
		for _, bias := range []bool{true, false} {
			name := fmt.Sprintf("x %v, bias %v", shape, bias)
			var b *ts.Tensor
			want := x.MustMatmul(w1.MustT(false), false)
			if bias {
				b = b1
				want = want.MustAdd(b1, true)
			}
			if d := worst(MKLDNNLinear(x, p1, b), want); d > 1e-5 {
				t.Errorf("%s: linear differs from libtorch's by %.3g", name, d)
			}
		}
		inner := x.MustMatmul(w1.MustT(false), false).MustAdd(b1, true).MustGelu("none", true)
		want := inner.MustMatmul(w2.MustT(false), true).MustAdd(b2, true)
		if d := worst(MKLDNNFeedForward(x, p1, b1, p2, b2), want); d > 1e-5 {
			t.Errorf("x %v: feed-forward differs from libtorch's by %.3g", shape, d)
		}
	}
	if got := MKLDNNLinear(gen(0, in), p1, b1).MustSize(); len(got) != 2 || got[0] != 0 || got[1] != hidden {
		t.Errorf("no rows: the result is %v, want [0 %d]", got, hidden)
	}
}
