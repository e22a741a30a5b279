package models

import (
	"fmt"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
	"convrep/internal/torch"
)

// Every layer's query, key and value weights (and biases) lie end to end in one tensor, so that the
// projection is one GEMM without a copy, while each stays a trainable parameter under its checkpoint name:
// in a new model of each family and in one loaded from a checkpoint.
func TestQKVShareOneTensor(t *testing.T) {
	models := map[string]*Model{}
	for _, arch := range Archs() {
		c, err := NewConfig(arch, Sizes{VocabSize: 50, HiddenSize: 16, NumLayers: 2, NumHeads: 2, IntermediateSize: 32, MaxSequence: 16, PadTokenID: 1})
		if err != nil {
			t.Fatal(err)
		}
		if models["new "+string(arch)], err = New(c, Heads{}, gotch.CPU); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := Load(shared.MustPath(t, "fixtures", "tiny-bert"), LoadOptions{Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	models["loaded tiny-bert"] = loaded
	for what, m := range models {
		f := m.Config.Family()
		for i, l := range m.layers {
			for _, part := range []struct {
				suffix  string
				q, k, v *ts.Tensor
			}{{"weight", l.query.w, l.key.w, l.value.w}, {"bias", l.query.b, l.key.b, l.value.b}} {
				if !torch.RowsEndToEnd(part.q, part.k, part.v) {
					t.Errorf("%s, layer %d: the query, key and value %ss are not end to end in one tensor", what, i, part.suffix)
				}
				for name, p := range map[string]*ts.Tensor{f.block.query: part.q, f.block.key: part.k, f.block.value: part.v} {
					full := f.LayerPrefix(i) + name + "." + part.suffix
					if m.Params()[full] != p {
						t.Errorf("%s: %s is not the parameter the layer multiplies by", what, full)
					}
					if !p.MustRequiresGrad() || !p.MustIsLeaf(false) {
						t.Errorf("%s: %s is not a leaf that requires its gradient", what, full)
					}
				}
			}
		}
	}
}

// The joined projection computes what three linears compute, and backward gives each weight, bias and the
// input the gradients three linears would: with all three heads in the loss, and with one of them unused, whose
// weights then get zero gradients; in fp32 within 1e-6 (outputs) and 1e-5 (gradients), and under bf16 autocast,
// where both cast their inputs to bf16 and round each GEMM's output to it, as near the fp32 values as three
// linears are (the input's gradient sums the three heads' in another order: three GEMMs into one output against
// autograd's bf16 sum of three).
func TestProjectMatchesThreeLinears(t *testing.T) {
	for _, tc := range []struct {
		name     string
		use      [3]bool // q, k, v in the loss
		autocast bool
	}{
		{"q, k and v", [3]bool{true, true, true}, false},
		{"k unused", [3]bool{true, false, true}, false},
		{"q, k and v under bf16 autocast", [3]bool{true, true, true}, true},
		{"k unused under bf16 autocast", [3]bool{true, false, true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { checkProject(t, tc.use, tc.autocast) })
	}
}

func checkProject(t *testing.T, use [3]bool, autocast bool) {
	m := benchModel(t, 100, 1, 32, 4, 64)
	b := m.layers[0]
	const bsz, seq, dh = 2, 5, 8
	if err := torch.ManualSeed(7); err != nil {
		t.Fatal(err)
	}
	x := ts.MustRandn([]int64{bsz, seq, 32}, gotch.Float, gotch.CPU).MustSetRequiresGrad(true, true)
	up := [3]*ts.Tensor{}
	for i := range up {
		up[i] = ts.MustRandn([]int64{bsz, 4, seq, dh}, gotch.Float, gotch.CPU)
	}
	params := []*ts.Tensor{x, b.query.w, b.key.w, b.value.w, b.query.b, b.key.b, b.value.b}
	grads := func(project func() (q, k, v *ts.Tensor), autocast bool) (outs []*ts.Tensor, gs []*ts.Tensor) {
		t.Helper()
		for _, p := range params {
			if g := p.MustGrad(false); g.MustDefined() {
				g.MustZero_()
			}
		}
		run := func(fn func() error) error { return torch.Catch("project", fn) }
		if autocast {
			run = func(fn func() error) error {
				return torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error { return torch.Catch("project", fn) })
			}
		}
		err := run(func() error {
			q, k, v := project()
			outs = []*ts.Tensor{q, k, v}
			var loss *ts.Tensor
			for i, o := range outs {
				if !use[i] {
					continue
				}
				term := o.MustMul(up[i], false).MustSum(gotch.Float, true)
				if loss != nil {
					term = loss.MustAdd(term, true)
				}
				loss = term
			}
			return loss.Backward()
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params {
			g := p.MustGrad(false)
			if !g.MustDefined() { // never in a graph that reached the loss: zero
				g = p.MustZerosLike(false)
			}
			gs = append(gs, g.MustMulScalar(ts.FloatScalar(1), true))
		}
		return outs, gs
	}
	joined := func() (q, k, v *ts.Tensor) { return b.project(x, bsz, seq, dh) }
	separate := func() (q, k, v *ts.Tensor) {
		split := func(l linear) *ts.Tensor { // the projection before the weights were joined
			return ts.MustLinear(x, l.w, l.b).MustView([]int64{bsz, seq, 4, dh}, true).MustTranspose(1, 2, true)
		}
		return split(b.query), split(b.key), split(b.value)
	}
	joinedOut, joinedGrads := grads(joined, autocast)
	separateOut, separateGrads := grads(separate, autocast)
	// In fp32 the two agree within rounding. Under autocast each is held to the fp32 values (three linears
	// without autocast), and the joined projection may be off by at most 1.5 times what three linears are, or 2⁻⁸
	// of the largest value where theirs is smaller: bf16 rounds to 2⁻⁸ relative, and the two round differently.
	near := func(name string, got, same, ref *ts.Tensor, tol float64) {
		t.Helper()
		if !autocast {
			if d := maxAbsDiff(got, same); d > tol || !got.MustDefined() {
				t.Errorf("%s differs from three linears' by %g", name, d)
			}
			return
		}
		scale := ref.MustAbs(false).MustMax(true).Float64Values()[0]
		mine, theirs := maxAbsDiff(got, ref), maxAbsDiff(same, ref)
		if mine > max(1.5*theirs, scale/256) {
			t.Errorf("%s under bf16 autocast is %g from fp32, three linears %g (largest value %g)", name, mine, theirs, scale)
		}
	}
	refOut, refGrads := separateOut, separateGrads
	if autocast {
		refOut, refGrads = grads(separate, false)
	}
	for i, name := range []string{"q", "k", "v"} {
		near(name, joinedOut[i], separateOut[i], refOut[i], 1e-6)
	}
	for i, name := range []string{"input", "query weight", "key weight", "value weight", "query bias", "key bias", "value bias"} {
		near("the "+name+"'s gradient", joinedGrads[i], separateGrads[i], refGrads[i], 1e-5)
		unused := (i == 2 || i == 5) && !use[1] || (i == 1 || i == 4) && !use[0] || (i == 3 || i == 6) && !use[2]
		if n := joinedGrads[i].MustAbs(false).MustMax(true).Float64Values()[0]; (n == 0) != unused {
			t.Errorf("the %s's gradient has largest magnitude %g; its head is unused: %v", name, n, unused)
		}
	}
}

func maxAbsDiff(a, b *ts.Tensor) float64 {
	if fmt.Sprint(a.MustSize()) != fmt.Sprint(b.MustSize()) {
		return 1e300
	}
	return a.MustDetach(false).MustSub(b, true).MustAbs(true).MustMax(true).Float64Values()[0]
}
