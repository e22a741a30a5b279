package torch_test

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
)

// Under CPU bf16 autocast a matmul of fp32 tensors runs in bf16; after restore it is fp32 again, and the
// state reported follows, nested levels included.
func TestAutocastCastsMatmulAndRestores(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := ts.MustOnes([]int64{4, 8}, gotch.Float, gotch.CPU)
	b := ts.MustOnes([]int64{8, 3}, gotch.Float, gotch.CPU)
	matmulType := func() gotch.DType {
		y := a.MustMatmul(b, false)
		defer y.MustDrop()
		return y.DType()
	}
	if on, _ := torch.AutocastEnabled(gotch.CPU); on {
		t.Fatal("autocast is on before the test")
	}
	if got := matmulType(); got != gotch.Float {
		t.Fatalf("matmul outside autocast gives %v", got)
	}
	outer, err := torch.Autocast(gotch.CPU, gotch.BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	if on, dt := torch.AutocastEnabled(gotch.CPU); !on || dt != gotch.BFloat16 {
		t.Errorf("AutocastEnabled = %v, %v; want true, BFloat16", on, dt)
	}
	if got := matmulType(); got != gotch.BFloat16 {
		t.Errorf("matmul under bf16 autocast gives %v, want BFloat16", got)
	}
	inner, err := torch.Autocast(gotch.CPU, gotch.BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	inner()
	if got := matmulType(); got != gotch.BFloat16 {
		t.Errorf("after the inner level's restore matmul gives %v, want BFloat16 (the outer level is on)", got)
	}
	outer()
	outer() // a second call does nothing
	if got := matmulType(); got != gotch.Float {
		t.Errorf("matmul after restore gives %v, want Float", got)
	}
	if on, _ := torch.AutocastEnabled(gotch.CPU); on {
		t.Error("autocast still on after restore")
	}
}

// Dtypes autocast does not run on a device type are refused before any state changes.
func TestAutocastRejectsUnsupportedDTypes(t *testing.T) {
	for _, tc := range []struct {
		dev   gotch.Device
		dtype gotch.DType
		want  string
	}{
		{gotch.CPU, gotch.Half, "BFloat16 only"},
		{gotch.CPU, gotch.Float, "BFloat16 only"},
		{gotch.CudaBuilder(0), gotch.Float, "BFloat16 only"},
		{gotch.CudaBuilder(0), gotch.Double, "BFloat16 only"},
		{gotch.CudaBuilder(0), gotch.Half, "gradient scaler"},
	} {
		restore, err := torch.Autocast(tc.dev, tc.dtype)
		if err == nil {
			restore()
			t.Errorf("Autocast(%v, %v) accepted", tc.dev, tc.dtype)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Autocast(%v, %v): %v, want a mention of %q", tc.dev, tc.dtype, err, tc.want)
		}
		if on, _ := torch.AutocastEnabled(gotch.CPU); on {
			t.Errorf("Autocast(%v, %v) refused but left CPU autocast on", tc.dev, tc.dtype)
		}
	}
}

// A tiny random BERT under bf16 autocast stays within bf16's precision of its fp32 forward, yet differs
// from it (autocast did act); backward leaves fp32 gradients on the fp32 parameters.
func TestAutocastTinyBERTForwardBackward(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.ManualSeed(5); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: 200, HiddenSize: 64, NumLayers: 2, NumHeads: 4,
		IntermediateSize: 128, HiddenAct: "gelu", MaxPositions: 64, TypeVocabSize: 2, LayerNormEps: 1e-12,
		InitializerRange: 0.02, TieWordEmbeddings: true}
	m, err := models.New(c, models.Heads{}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	ids := ts.MustRandintLow(1, 200, []int64{3, 10}, gotch.Int64, gotch.CPU)
	mask := ts.MustOfSlice([]int64{
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
		1, 1, 1, 0, 0, 0, 0, 0, 0, 0}).MustView([]int64{3, 10}, true)
	in := models.Input{IDs: ids, Mask: mask}

	var ref *ts.Tensor
	err = torch.NoGrad(func() error {
		out, err := m.Forward(in, false)
		if err != nil {
			return err
		}
		ref = out.Last.MustShallowClone()
		out.Drop()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var loss, last *ts.Tensor
	err = torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error {
		out, err := m.Forward(in, false)
		if err != nil {
			return err
		}
		last = out.Last.MustShallowClone()
		loss = out.Last.MustTotype(gotch.Float, false).MustSquare(true).MustMean(gotch.Float, true)
		out.Drop()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if on, _ := torch.AutocastEnabled(gotch.CPU); on {
		t.Fatal("WithAutocast left autocast on")
	}
	// The last layer ends in LayerNorm: outputs are O(1), and bf16 keeps 8 bits of mantissa (relative
	// rounding 2^-9 ≈ 0.002 per cast); two layers of casts stay within a few bf16 steps (0.03) anywhere.
	diff := last.MustTotype(gotch.Float, false).MustSub(ref, true).MustAbs(true)
	worst := diff.MustMax(false).Float64Values()[0]
	meanDiff := diff.MustMean(gotch.Float, true).Float64Values()[0]
	t.Logf("bf16 autocast against fp32: largest difference %.3g, mean %.3g", worst, meanDiff)
	if !(worst < 0.03) || !(meanDiff < 0.005) {
		t.Errorf("bf16 forward differs from fp32 by %.3g at most, %.3g on average (want < 0.03, < 0.005)", worst, meanDiff)
	}
	if worst == 0 {
		t.Error("bf16 forward equals the fp32 one bit for bit: autocast did not act")
	}

	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if l := loss.Float64Values()[0]; math.IsNaN(l) || l <= 0 {
		t.Fatalf("loss = %v", l)
	}
	for name, p := range m.Params() {
		if p.DType() != gotch.Float {
			t.Errorf("parameter %s is %v, want Float", name, p.DType())
		}
		g := p.MustGrad(false)
		if !g.MustDefined() {
			t.Errorf("parameter %s has no gradient", name)
			continue
		}
		if g.DType() != gotch.Float {
			t.Errorf("gradient of %s is %v, want Float", name, g.DType())
		}
		g.MustDrop()
	}
}

// WithoutAutocast turns autocast off inside, so a matmul of fp32 tensors stays fp32 (and equals the one
// outside autocast bit for bit), and puts it back on after, even when fn panics.
func TestWithoutAutocast(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := ts.MustRandn([]int64{5, 7}, gotch.Float, gotch.CPU)
	b := ts.MustRandn([]int64{7, 3}, gotch.Float, gotch.CPU)
	ref := a.MustMatmul(b, false).Float64Values(true)
	err := torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error {
		var inside *ts.Tensor
		if err := torch.WithoutAutocast(func() error { inside = a.MustMatmul(b, false); return nil }); err != nil {
			return err
		}
		if inside.DType() != gotch.Float {
			t.Errorf("matmul without autocast gives %v, want Float", inside.DType())
		}
		if got := inside.Float64Values(true); !slices.Equal(got, ref) {
			t.Errorf("matmul without autocast %v differs from fp32 %v", got, ref)
		}
		err := torch.Catch("panic inside", func() error {
			return torch.WithoutAutocast(func() error { panic("boom") })
		})
		if err == nil {
			t.Error("the panic was lost")
		}
		if on, dt := torch.AutocastEnabled(gotch.CPU); !on || dt != gotch.BFloat16 {
			t.Errorf("after WithoutAutocast: autocast %v with %v, want on with BFloat16", on, dt)
		}
		y := a.MustMatmul(b, false)
		defer y.MustDrop()
		if y.DType() != gotch.BFloat16 {
			t.Errorf("matmul back under autocast gives %v, want BFloat16", y.DType())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if on, _ := torch.AutocastEnabled(gotch.CPU); on {
		t.Error("autocast on after WithAutocast")
	}
}
