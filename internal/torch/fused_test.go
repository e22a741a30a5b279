package torch

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// JoinRows is [a; b; c], differentiable in each, with no copy exactly when the three lie end to end.
func TestJoinRows(t *testing.T) {
	base := ts.MustArange(ts.IntScalar(24), gotch.Float, gotch.CPU).MustView([]int64{6, 4}, true)
	defer base.MustDrop()
	rows := func(from, n int64) *ts.Tensor {
		return base.MustNarrow(0, from, n, false).MustDetach(true).MustSetRequiresGrad(true, true)
	}
	fresh := func(n int64) *ts.Tensor {
		return ts.MustRandn([]int64{n, 4}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	}
	for _, c := range []struct {
		name     string
		parts    func() [3]*ts.Tensor
		endToEnd bool
	}{
		{"end to end", func() [3]*ts.Tensor { return [3]*ts.Tensor{rows(0, 2), rows(2, 1), rows(3, 3)} }, true},
		{"out of order", func() [3]*ts.Tensor { return [3]*ts.Tensor{rows(2, 1), rows(0, 2), rows(3, 3)} }, false},
		{"a gap", func() [3]*ts.Tensor { return [3]*ts.Tensor{rows(0, 1), rows(2, 1), rows(3, 3)} }, false},
		{"separate tensors", func() [3]*ts.Tensor { return [3]*ts.Tensor{fresh(2), fresh(1), fresh(3)} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.parts()
			if got := RowsEndToEnd(p[0], p[1], p[2]); got != c.endToEnd {
				t.Fatalf("RowsEndToEnd = %v, want %v", got, c.endToEnd)
			}
			var joined, want, weights *ts.Tensor
			err := Catch("join", func() error {
				joined = JoinRows(p[0], p[1], p[2])
				want = ts.MustCat([]*ts.Tensor{p[0], p[1], p[2]}, 0).MustDetach(true)
				weights = ts.MustRandn(joined.MustSize(), gotch.Float, gotch.CPU)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(joined, want); d != 0 {
				t.Fatalf("joined rows differ from torch.cat by %g", d)
			}
			if !joined.MustRequiresGrad() {
				t.Fatal("the joined rows do not require a gradient")
			}
			if err := joined.MustMul(weights, false).MustSum(gotch.Float, true).Backward(); err != nil {
				t.Fatal(err)
			}
			from := int64(0)
			for i, x := range p {
				n := x.MustSize()[0]
				if d := maxDiff(x.MustGrad(false), weights.MustNarrow(0, from, n, false)); d != 0 {
					t.Errorf("part %d's gradient differs from its rows of the upstream gradient by %g", i, d)
				}
				from += n
			}
		})
	}
}

// DenseGELU computes gelu(x·wᵀ + b), fused where no gradient is needed and the device's _addmm_activation
// computes the GELU asked for (on the CPU, the exact one), and always with gradients where they are needed.
func TestDenseGELU(t *testing.T) {
	if got := AddmmGELU(gotch.CPU); got != ExactGELU {
		t.Fatalf("_addmm_activation on the CPU computes GELU kind %d, want the exact one (libtorch 1.13-2.11 run addmm, then gelu_)", got)
	}
	if err := ManualSeed(5); err != nil {
		t.Fatal(err)
	}
	x := ts.MustRandn([]int64{2, 3, 8}, gotch.Float, gotch.CPU).MustMulScalar(ts.FloatScalar(2), true)
	w := ts.MustRandn([]int64{16, 8}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	b := ts.MustRandn([]int64{16}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	for _, c := range []struct {
		tanh, noGrad, wantFused bool
	}{
		{false, true, true},   // exact GELU on the CPU, inference: one fused GEMM
		{true, true, false},   // the CPU kernel's GELU is not the tanh one
		{false, false, false}, // training: _addmm_activation has no derivative
		{true, false, false},
	} {
		name := fmt.Sprintf("tanh %v, no grad %v", c.tanh, c.noGrad)
		approx := map[bool]string{false: "none", true: "tanh"}[c.tanh]
		var got, want *ts.Tensor
		var fused bool
		run := func() error {
			got, fused = DenseGELU(x, w, b, c.tanh)
			want = ts.MustLinear(x, w, b).MustGelu(approx, true)
			return nil
		}
		if c.noGrad {
			err := NoGrad(func() error { return Catch(name, run) })
			if err != nil {
				t.Fatal(err)
			}
		} else if err := Catch(name, run); err != nil {
			t.Fatal(err)
		}
		if fused != c.wantFused {
			t.Errorf("%s: fused %v, want %v", name, fused, c.wantFused)
		}
		if s := got.MustSize(); fmt.Sprint(s) != "[2 3 16]" {
			t.Fatalf("%s: shape %v", name, s)
		}
		if d := maxDiff(got, want); d > 1e-6 {
			t.Errorf("%s: differs from gelu(linear) by %g", name, d)
		}
		if c.noGrad {
			continue
		}
		if err := got.MustSum(gotch.Float, false).Backward(); err != nil {
			t.Fatalf("%s: backward: %v", name, err)
		}
		if g := w.MustGrad(false); !g.MustDefined() {
			t.Errorf("%s: the weight got no gradient", name)
		}
	}
}

func maxDiff(a, b *ts.Tensor) float64 {
	d := a.MustDetach(false).MustSub(b, true).MustAbs(true).MustMax(true)
	defer d.MustDrop()
	v := d.Float64Values()[0]
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
}

// ProjectHeads gives linear → view → permute → unbind's q, k and v, cut from one GEMM output (k lies e values
// after q, v e after k, in one storage), and refuses weights whose rows are not three times a multiple of the
// heads, naming the shapes.
func TestProjectHeads(t *testing.T) {
	x := ts.MustArange(ts.IntScalar(2*3*4), gotch.Float, gotch.CPU).MustView([]int64{2, 3, 4}, true)
	w := ts.MustArange(ts.IntScalar(12*4), gotch.Float, gotch.CPU).MustDivScalar(ts.FloatScalar(7), true).MustView([]int64{12, 4}, true)
	bias := ts.MustArange(ts.IntScalar(12), gotch.Float, gotch.CPU)
	defer Drop(x, w, bias)
	var q, k, v *ts.Tensor
	if err := Catch("project", func() error { q, k, v = ProjectHeads(x, w, bias, 2); return nil }); err != nil {
		t.Fatal(err)
	}
	defer Drop(q, k, v)
	want := ts.MustLinear(x, w, bias).MustView([]int64{2, 3, 3, 2, 2}, true).MustPermute([]int64{2, 0, 3, 1, 4}, true).MustUnbind(0, true)
	for i, got := range []*ts.Tensor{q, k, v} {
		if fmt.Sprint(got.MustSize()) != "[2 2 3 2]" || !got.MustAllclose(want[i], 1e-6, 1e-6, false, false) {
			t.Errorf("part %d: %v, want %v", i, got.Float64Values(), want[i].Float64Values())
		}
	}
	if k.MustDataPtr() != unsafe.Add(q.MustDataPtr(), 4*4) || v.MustDataPtr() != unsafe.Add(k.MustDataPtr(), 4*4) {
		t.Errorf("q, k and v at %v, %v, %v: not one GEMM output's memory", q.MustDataPtr(), k.MustDataPtr(), v.MustDataPtr())
	}
	err := Catch("project", func() error { ProjectHeads(x, w, bias, 5); return nil })
	if err == nil || !strings.Contains(err.Error(), "[12, 4]") {
		t.Errorf("12 rows of weights for 5 heads: error %v, want one naming the weights' shape [12, 4]", err)
	}
}
