package testutil

import (
	"math"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives"
)

// CheckLossUnderAutocast checks that o's loss on batch under bf16 autocast (CPU's, which casts the same ops to
// bf16 as CUDA's for these models) is a Float within bf16's precision of its fp32 loss, and that autocast acted.
// Both losses are computed without dropout, so they see the same network; the caller's OS thread is where
// autocast lives (GradOn pins it).
func CheckLossUnderAutocast(t *testing.T, name string, o objectives.Objective, batch any) {
	t.Helper()
	loss := func() (float64, gotch.DType, map[string]float64) {
		l, mt, err := o.Loss(batch, false)
		if err != nil {
			t.Fatal(err)
		}
		defer l.MustDrop()
		return l.Float64Values()[0], l.DType(), Metrics(t, mt)
	}
	fp32, dt32, _ := loss()
	var bf16 float64
	var dt16 gotch.DType
	var metrics map[string]float64
	if err := torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error { bf16, dt16, metrics = loss(); return nil }); err != nil {
		t.Fatal(err)
	}
	diff := math.Abs(bf16 - fp32)
	t.Logf("%s: fp32 loss %.6f, under bf16 autocast %.6f (%v): |diff| %.3g, relative %.3g; metrics %v",
		name, fp32, bf16, dt16, diff, diff/math.Abs(fp32), metrics)
	if dt32 != gotch.Float || dt16 != gotch.Float {
		t.Errorf("loss dtype %v in fp32, %v under bf16 autocast; want Float both", dt32, dt16)
	}
	// The encoder's matmuls round to bf16 (8 bits: 2^-9 relative per cast) through two layers; the
	// loss on top keeps fp32. 1% of the loss (about 3 bf16 steps) bounds that; a loss in bf16 would still pass this bound,
	// which is what the dtype check above and CheckArithmeticFP32 are for.
	if math.IsNaN(bf16) || diff > 0.01*math.Max(1, math.Abs(fp32)) {
		t.Errorf("loss %.6f under bf16 autocast, %.6f in fp32: differ by %.3g", bf16, fp32, diff)
	}
	if diff == 0 {
		t.Error("the bf16 loss equals the fp32 one bit for bit: autocast did not act")
	}
}

// CheckArithmeticFP32 checks that a loss's own arithmetic runs in fp32 under bf16 autocast: on fp32 inputs
// it gives a Float within float rounding of its result without autocast.
func CheckArithmeticFP32(t *testing.T, name string, loss func() (*ts.Tensor, error)) {
	t.Helper()
	value := func() (float64, gotch.DType) {
		l, err := loss()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer l.MustDrop()
		return l.Float64Values()[0], l.DType()
	}
	want, _ := value()
	var got float64
	var dt gotch.DType
	if err := torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error { got, dt = value(); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%-22s fp32 %.7f, under bf16 autocast %.7f (%v)", name, want, got, dt)
	if dt != gotch.Float || math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s under bf16 autocast: %.7f (%v), fp32 %.7f", name, got, dt, want)
	}
}
