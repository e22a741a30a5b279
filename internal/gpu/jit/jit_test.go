package jit

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/devtest"
	"convrep/internal/torch"
)

// On the test device (CONVREP_TEST_DEVICE: cuda in scripts/gpu_check.sh) the kernels compile and load; on a
// CPU Enable refuses with an error saying why, and the ops run libtorch's composites.
func TestEnableOnTheTestDevice(t *testing.T) {
	dev := devtest.Device(t)
	l, err := Enable(dev)
	if !dev.IsCuda() {
		if err == nil || !strings.Contains(err.Error(), "not a CUDA device") {
			t.Fatalf("Enable on %v: error %v, want one saying it is not a CUDA device", dev, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Arch < 70 || !torch.KernelsLoaded(dev) {
		t.Fatalf("loaded %+v, KernelsLoaded %v", l, torch.KernelsLoaded(dev))
	}
}

// pass is one forward and backward of an op on fresh leaves made from the same values, with the kernels' path
// on or off: the output and the inputs' gradients, as float64s.
type pass struct {
	out   []float64
	grads [][]float64
}

func run(t *testing.T, kernels bool, in []*ts.Tensor, dy *ts.Tensor, op func(leaves []*ts.Tensor) *ts.Tensor) pass {
	t.Helper()
	torch.UseKernels(kernels)
	defer torch.UseKernels(true)
	var p pass
	err := torch.Catch("pass", func() error {
		leaves := make([]*ts.Tensor, len(in))
		for i, x := range in {
			leaves[i] = x.MustDetach(false).MustSetRequiresGrad(true, true)
		}
		out := op(leaves)
		loss := out.MustMul(dy, false).MustSum(gotch.Double, true)
		if err := loss.Backward(); err != nil {
			return err
		}
		p.out = out.MustTotype(gotch.Double, false).Float64Values()
		for _, l := range leaves {
			p.grads = append(p.grads, l.MustGrad(false).MustTotype(gotch.Double, true).Float64Values())
		}
		torch.Drop(append(leaves, out, loss)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); d > tol*math.Max(scale, 1e-3) || math.IsNaN(got[i]) {
			t.Fatalf("%s[%d] = %.9g, the composite gives %.9g (|d| %.3g, scale %.3g)", what, i, got[i], want[i], d, scale)
		}
	}
}

// The fused ops follow libtorch's composites: within 1e-5 in float32 (forward and every gradient), within
// bfloat16's rounding in bfloat16, without dropout. With dropout the backward applies the forward's mask: the
// gradient reaching x is the residual's times 0 or 1/(1−p), and about 1−p of the values are kept. On a CPU both
// sides are the composite, bit for bit.
func TestFusedOpsFollowTheComposites(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := devtest.Device(t)
	if dev.IsCuda() {
		if _, err := Enable(dev); err != nil {
			t.Fatal(err)
		}
	}
	if err := torch.ManualSeed(7); err != nil {
		t.Fatal(err)
	}
	const rows, hidden, inner = 10, 768, 3072
	for _, c := range []struct {
		dtype gotch.DType
		tol   float64
	}{{gotch.Float, 1e-5}, {gotch.BFloat16, 3e-2}} {
		if !dev.IsCuda() && c.dtype == gotch.BFloat16 {
			continue // the CPU's composites are compared in float32
		}
		randn := func(scale float64, shape ...int64) *ts.Tensor {
			return ts.MustRandn(shape, gotch.Float, dev).MustMulScalar(ts.FloatScalar(scale), true)
		}
		ln := func(p float64) func([]*ts.Tensor) *ts.Tensor {
			return func(l []*ts.Tensor) *ts.Tensor { return torch.DropAddLayerNorm(l[0], l[1], l[2], l[3], p, 1e-12) }
		}
		// 768 and 350 columns run a warp a row (350 with a last chunk of two), 1030 a block a row
		// (internal/torch/kernels.cpp's LNLaunch); 10 rows leave the last block of four warps half idle.
		for _, width := range []int64{hidden, 350, 1030} {
			x, resid := randn(1, 2, rows/2, width).MustTotype(c.dtype, true), randn(3, 2, rows/2, width).MustTotype(c.dtype, true)
			gamma, beta := randn(0.2, width).MustAddScalar(ts.FloatScalar(1), true), randn(0.1, width)
			dy := randn(1, 2, rows/2, width).MustTotype(c.dtype, true)
			t.Run(fmt.Sprintf("layernorm/%v/%d", c.dtype, width), func(t *testing.T) {
				in := []*ts.Tensor{x, resid, gamma, beta}
				want, got := run(t, false, in, dy, ln(0)), run(t, true, in, dy, ln(0))
				near(t, "out", got.out, want.out, c.tol)
				for i, name := range []string{"dx", "dresid", "dgamma", "dbeta"} {
					near(t, name, got.grads[i], want.grads[i], c.tol)
				}
			})
			if dev.IsCuda() && c.dtype == gotch.Float {
				t.Run(fmt.Sprintf("dropout/%d", width), func(t *testing.T) {
					const p = 0.1
					got := run(t, true, []*ts.Tensor{x, resid, gamma, beta}, dy, ln(p))
					kept := 0
					for i, dr := range got.grads[1] {
						ratio := got.grads[0][i] / dr
						switch {
						case dr == 0:
						case got.grads[0][i] == 0:
						case math.Abs(ratio-1/(1-p)) < 1e-5:
							kept++
						default:
							t.Fatalf("dx/dresid at %d = %v, want 0 or 1/(1-p)", i, ratio)
						}
					}
					if share := float64(kept) / float64(len(got.grads[1])); math.Abs(share-(1-p)) > 0.02 {
						t.Fatalf("kept %.4f of the values, want %.2f", share, 1-p)
					}
				})
			}
			torch.Drop(x, resid, gamma, beta, dy)
		}
		h, w, b := randn(1, 2, rows/2, hidden).MustTotype(c.dtype, true), randn(0.03, inner, hidden).MustTotype(c.dtype, true), randn(0.5, inner)
		dh := randn(1, 2, rows/2, inner).MustTotype(c.dtype, true)
		t.Run(fmt.Sprintf("gelu/%v", c.dtype), func(t *testing.T) {
			op := func(l []*ts.Tensor) *ts.Tensor { return torch.DenseBiasGELU(l[0], l[1], l[2]) }
			in := []*ts.Tensor{h, w, b}
			want, got := run(t, false, in, dh, op), run(t, true, in, dh, op)
			near(t, "out", got.out, want.out, c.tol)
			for i, name := range []string{"dx", "dw", "dbias"} {
				near(t, name, got.grads[i], want.grads[i], c.tol)
			}
		})
		torch.Drop(h, w, b, dh)
	}
}

// The embeddings' op follows libtorch's composite (lookups, add, layer_norm) within 1e-5 in float32, forward and
// every table's and weight's gradient, with token types and without (DistilBERT), at BERT-base's width and at
// one that is not a multiple of four. With dropout the kept outputs are the undropped ones times 1/(1−p), and
// about 1−p are kept. On a CPU both sides are the composite.
func TestFusedEmbeddingsFollowTheComposite(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := devtest.Device(t)
	if dev.IsCuda() {
		if _, err := Enable(dev); err != nil {
			t.Fatal(err)
		}
	}
	if err := torch.ManualSeed(11); err != nil {
		t.Fatal(err)
	}
	const batch, seq, vocab, positions, types = 2, 5, 50, 40, 2
	randn := func(scale float64, shape ...int64) *ts.Tensor {
		return ts.MustRandn(shape, gotch.Float, dev).MustMulScalar(ts.FloatScalar(scale), true)
	}
	ids := func(below int64) *ts.Tensor {
		return ts.MustRandint(below, []int64{batch, seq}, gotch.Int64, dev)
	}
	wordIDs, posIDs, typeIDs := ids(vocab), ids(positions), ids(types)
	defer torch.Drop(wordIDs, posIDs, typeIDs)
	for _, width := range []int64{768, 100} {
		for _, withTypes := range []bool{true, false} {
			word, pos, typ := randn(0.05, vocab, width), randn(0.02, positions, width), randn(0.02, types, width)
			gamma, beta := randn(0.2, width).MustAddScalar(ts.FloatScalar(1), true), randn(0.1, width)
			dy := randn(1, batch, seq, width)
			in := []*ts.Tensor{word, pos, gamma, beta}
			if withTypes {
				in = append(in, typ)
			}
			op := func(p float64) func([]*ts.Tensor) *ts.Tensor {
				return func(l []*ts.Tensor) *ts.Tensor {
					if withTypes {
						return torch.EmbedLayerNorm(l[0], l[1], l[4], wordIDs, posIDs, typeIDs, l[2], l[3], p, 1e-12)
					}
					return torch.EmbedLayerNorm(l[0], l[1], nil, wordIDs, posIDs, nil, l[2], l[3], p, 1e-12)
				}
			}
			name := fmt.Sprintf("%d columns, token types %v", width, withTypes)
			t.Run(name, func(t *testing.T) {
				want, got := run(t, false, in, dy, op(0)), run(t, true, in, dy, op(0))
				near(t, "out", got.out, want.out, 1e-5)
				for i, g := range []string{"dword", "dpos", "dgamma", "dbeta", "dtype"}[:len(in)] {
					near(t, g, got.grads[i], want.grads[i], 1e-5)
				}
			})
			if dev.IsCuda() {
				t.Run(name+", dropout", func(t *testing.T) {
					const p = 0.1
					plain, dropped := run(t, true, in, dy, op(0)), run(t, true, in, dy, op(p))
					kept := 0
					for i, v := range dropped.out {
						switch {
						case v == 0:
						case math.Abs(v-plain.out[i]/(1-p)) <= 1e-5*math.Abs(v):
							kept++
						default:
							t.Fatalf("out[%d] = %v, want 0 or %v", i, v, plain.out[i]/(1-p))
						}
					}
					if share := float64(kept) / float64(len(dropped.out)); math.Abs(share-(1-p)) > 0.04 {
						t.Fatalf("kept %.4f of the values, want %.2f", share, 1-p)
					}
				})
			}
			torch.Drop(word, pos, typ, gamma, beta, dy)
		}
	}
}
