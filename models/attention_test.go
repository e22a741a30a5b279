package models

import (
	"math"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/devtest"
	"convrep/internal/torch"
	"convrep/tokenizers"
)

// The fused kernel, where the linked libtorch has one, computes what the explicit path computes, padding
// included, and with no mask for an unpadded batch; where it has none (1.13), HasAttention says so and the op
// itself fails, so the encoder cannot have picked it by mistake.
func TestFusedAttentionMatchesExplicit(t *testing.T) {
	one := ts.MustOnes([]int64{1, 1, 1, 1}, gotch.Float, gotch.CPU)
	keep := ts.MustOnes([]int64{1, 1, 1, 1}, gotch.Bool, gotch.CPU)
	probeErr := torch.Catch("attention", func() error { torch.Attention(one, one, one, keep, 0).MustDrop(); return nil })
	if got, want := torch.HasAttention(), probeErr == nil; got != want {
		t.Fatalf("torch.HasAttention() = %v, but calling the op gave error %v", got, probeErr)
	}
	if !torch.HasAttention() {
		t.Logf("no fused attention in this libtorch (%v): the explicit path is used", probeErr)
		return
	}
	if err := torch.ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	m := benchModel(t, 100, 1, 32, 4, 64)
	b := m.layers[0]
	for _, tc := range []struct {
		name     string
		mask     []int64 // [2,5]
		unpadded bool
	}{
		{"no padding", []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, false},
		{"no padding, no mask", []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, true},
		{"padded rows", []int64{1, 1, 1, 0, 0, 1, 1, 1, 1, 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mask := ts.MustOfSlice(tc.mask).MustView([]int64{2, 5}, true)
			maskAdd := extendedMask(mask)
			keep := newAttnMask(mask, tc.unpadded).keep // fused attention is available here
			if tc.unpadded != (keep == nil) {
				t.Fatalf("unpadded %v, but the fused path's mask is %v", tc.unpadded, keep)
			}
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

// An unpadded batch (Input.Unpadded) runs without a mask and gives what the all-ones mask gives. On the explicit
// path (libtorch 1.13) the bits are the same, in training too with the same seed: the mask adds 0 to every score
// and draws no random numbers. On the fused path no mask may pick another kernel, which rounds and draws its
// dropout its own way: there the outputs without dropout agree within 1e-5.
func TestUnpaddedBatchSkipsTheMask(t *testing.T) {
	m := benchModel(t, 100, 2, 32, 4, 64)
	ids := ts.MustOfSlice([]int64{5, 7, 9, 11, 2, 3, 4, 6, 8, 10}).MustView([]int64{2, 5}, true)
	mask := ids.MustOnesLike(false)
	defer torch.Drop(ids, mask)
	modes, tol := []bool{false, true}, 0.0
	if torch.HasAttention() {
		modes, tol = []bool{false}, 1e-5
	}
	for _, train := range modes {
		run := func(unpadded bool) *ts.Tensor {
			if err := torch.ManualSeed(9); err != nil {
				t.Fatal(err)
			}
			out, err := m.Forward(Input{IDs: ids, Mask: mask, Unpadded: unpadded}, train)
			if err != nil {
				t.Fatal(err)
			}
			last := out.Last.MustShallowClone()
			out.Drop()
			return last
		}
		masked, unmasked := run(false), run(true)
		if d := masked.MustSub(unmasked, false).MustAbs(true).MustMax(true).Float64Values()[0]; d > tol {
			t.Errorf("train %v: without the mask the encoder's output differs by %.3g from the all-ones mask's (allowed %g)", train, d, tol)
		}
		torch.Drop(masked, unmasked)
	}
}

// BatchInput marks a batch unpadded exactly when its attention mask, which the host built, is all ones.
func TestBatchInputKnowsPadding(t *testing.T) {
	for _, tc := range []struct {
		name string
		mask [][]int64
		want bool
	}{
		{"full rows", [][]int64{{1, 1, 1}, {1, 1, 1}}, true},
		{"one padded token", [][]int64{{1, 1, 1}, {1, 1, 0}}, false},
		{"one row", [][]int64{{1, 0}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := make([][]int64, len(tc.mask))
			for i, r := range tc.mask {
				ids[i] = make([]int64, len(r))
			}
			in, err := BatchInput(&tokenizers.Batch{InputIDs: ids, AttentionMask: tc.mask, TokenTypeIDs: ids}, gotch.CPU)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Drop()
			if in.Unpadded != tc.want {
				t.Errorf("Unpadded = %v, want %v", in.Unpadded, tc.want)
			}
		})
	}
}

// The fused attention drops attention probabilities at the rate asked, 0.1, whichever kernel libtorch picks
// on the test device (on an H100 with libtorch 2.11 in bf16, cuDNN's, whose dropout is its own code): with q
// and k zero every probability is 1/T, and v carrying key j's unit vector in column j puts each probability,
// dropped or kept, in an output element of its own. Over 256·12·32·32 probabilities the share dropped has a
// standard deviation of 0.00017, so a rate off by 0.001 (a threshold kept to 8 bits would be 0.0016 off) fails,
// as does a kept value not scaled by 1/(1-p).
func TestFusedAttentionDropsAtItsRate(t *testing.T) {
	if !torch.HasAttention() {
		t.Logf("no fused attention in this libtorch (%s): the explicit path's dropout is libtorch's dropout", torch.LibtorchVersion())
		return
	}
	dev := devtest.Device(t)
	dtype := gotch.Float
	if dev.IsCuda() {
		dtype = gotch.BFloat16 // the dtype autocast gives the encoder's attention, and the fused kernels' inputs
	}
	const b, heads, seq, dh, p = 256, 12, 32, 64, 0.1
	for _, masked := range []bool{false, true} {
		t.Run(map[bool]string{false: "no mask", true: "padding mask"}[masked], func(t *testing.T) {
			var share, kept float64
			var backend string
			err := torch.Catch("attention dropout", func() error {
				q := ts.MustZeros([]int64{b, heads, seq, dh}, dtype, dev)
				eye := ts.MustEye(seq, dtype, dev)
				v := eye.MustConstantPadNd([]int64{0, dh - seq}, true).MustExpand([]int64{b, heads, seq, dh}, false, true).MustContiguous(true)
				var keep *ts.Tensor
				if masked {
					keep = ts.MustOnes([]int64{b, 1, 1, seq}, gotch.Bool, dev)
				}
				defer torch.Drop(q, v, keep)
				var err error
				if backend, err = torch.AttentionBackend(q, q, v, keep, p); err != nil {
					return err
				}
				out := torch.Attention(q, q, v, keep, p).MustNarrow(-1, 0, seq, true).MustTotype(gotch.Double, true)
				defer out.MustDrop()
				zero := out.MustEq(ts.FloatScalar(0), false).MustTotype(gotch.Double, true)
				share = zero.MustMean(gotch.Double, true).Float64Values()[0]
				// the mean of the kept values: the sum of all over the number kept
				kept = out.MustSum(gotch.Double, false).Float64Values()[0] / (float64(b*heads*seq*seq) * (1 - share))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s on %v (%v): dropped share %.5f, kept value %.6f", backend, dev, dtype, share, kept)
			if math.Abs(share-p) > 0.001 {
				t.Errorf("%s attention dropped %.5f of the probabilities, want %.1f ± 0.001", backend, share, p)
			}
			if want := 1 / (seq * (1 - p)); math.Abs(kept-want) > 0.01*want {
				t.Errorf("%s attention kept probabilities at %.6f on average, want 1/(T(1-p)) = %.6f ± 1%%", backend, kept, want)
			}
		})
	}
}

// Under AlwaysMask (a CUDA graph's capture) an unpadded batch builds its mask too, so the captured kernels read
// the mask of every later batch they replay on; outside it, it builds none.
func TestAlwaysMaskBuildsTheMask(t *testing.T) {
	mask := ts.MustOnes([]int64{2, 3}, gotch.Int64, gotch.CPU)
	defer mask.MustDrop()
	built := func() bool {
		m := newAttnMask(mask, true)
		defer m.drop()
		return m.keep != nil || m.add != nil
	}
	if built() {
		t.Error("an unpadded batch built a mask outside AlwaysMask")
	}
	var inside bool
	if err := AlwaysMask(func() error { inside = built(); return nil }); err != nil {
		t.Fatal(err)
	}
	if !inside {
		t.Error("an unpadded batch built no mask under AlwaysMask")
	}
	if built() {
		t.Error("AlwaysMask stayed on after it returned")
	}
}
