package models

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// The fused kernel, where the linked libtorch has one, computes what the explicit path computes, padding
// included; where it has none (1.13), the probe says so and the op itself fails, so the encoder cannot have
// picked it by mistake.
func TestFusedAttentionMatchesExplicit(t *testing.T) {
	one := ts.MustOnes([]int64{1, 1, 1, 1}, gotch.Float, gotch.CPU)
	keep := ts.MustOnes([]int64{1, 1, 1, 1}, gotch.Bool, gotch.CPU)
	_, probeErr := ts.ScaledDotProductAttention(one, one, one, keep, 0, false, nil)
	if got, want := fusedAttentionAvailable(), probeErr == nil; got != want {
		t.Fatalf("fusedAttentionAvailable() = %v, but calling the op gave error %v", got, probeErr)
	}
	if !fusedAttentionAvailable() {
		t.Logf("no fused attention in this libtorch (%v): the explicit path is used", probeErr)
		return
	}
	if err := torch.ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	m := benchModel(t, 100, 1, 32, 4, 64)
	b := m.layers[0]
	for _, tc := range []struct {
		name string
		mask []int64 // [2,5]
	}{
		{"no padding", []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"padded rows", []int64{1, 1, 1, 0, 0, 1, 1, 1, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mask := ts.MustOfSlice(tc.mask).MustView([]int64{2, 5}, true)
			maskAdd := extendedMask(mask)
			keep := newAttnMask(mask).keep // fused attention is available here
			qkv := func() (q, k, v *ts.Tensor) {
				if err := torch.ManualSeed(11); err != nil { // the same q, k, v for both paths
					t.Fatal(err)
				}
				r := func() *ts.Tensor { return ts.MustRandn([]int64{2, 4, 5, 8}, gotch.Float, gotch.CPU) }
				return r(), r(), r()
			}
			var want, got *ts.Tensor
			err := torch.Catch("attention", func() error {
				q, k, v := qkv()
				want = b.attention(q, k, v, maskAdd, 8, gotch.Float, false)
				q, k, v = qkv()
				got = b.fusedAttention(q, k, v, keep, false)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			d := got.MustSub(want, false).MustAbs(true).MustMax(true).Float64Values()[0]
			if d > 1e-5 {
				t.Errorf("fused attention differs from the explicit path by %.3g", d)
			}
		})
	}
}
