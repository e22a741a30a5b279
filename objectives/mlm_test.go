package objectives

import (
	"math"
	"slices"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
)

// tinyMLMBERT is tinyBERT with an MLM head, in float64 when double.
func tinyMLMBERT(t *testing.T, seed uint64, double bool) *models.Model {
	t.Helper()
	gradOn(t)
	if err := torch.ManualSeed(seed); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: 50, HiddenSize: 16, NumLayers: 2, NumHeads: 2,
		IntermediateSize: 32, HiddenAct: "gelu", HiddenDropout: 0.1, AttentionDropout: 0.1, MaxPositions: 32,
		TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02, TieWordEmbeddings: true}
	var m *models.Model
	var err error
	build := func() { m, err = models.New(c, models.Heads{MLM: true}, gotch.CPU) }
	if double {
		withDouble(build)
	} else {
		build()
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mlmByLoops is the MLM loss written out: at each position with a label, −log softmax(logits)[label],
// averaged over those positions.
func mlmByLoops(logits []float64, v int, labels []int64) float64 {
	total, n := 0.0, 0
	for p, l := range labels {
		if l == IgnoreLabel {
			continue
		}
		row := logits[p*v : (p+1)*v]
		mx := slices.Max(row)
		den := 0.0
		for _, x := range row {
			den += math.Exp(x - mx)
		}
		total += -(row[l] - mx - math.Log(den))
		n++
	}
	return total / float64(n)
}

// The loss counts the chosen positions only, each by −log p(original token), with the head's logits; its
// gradient with respect to the hidden states matches finite differences in float64.
func TestMLMLossMatchesTheEquation(t *testing.T) {
	m := tinyMLMBERT(t, 3, true)
	const b, T, h, v = 2, 5, 16, 50
	labels := []int64{IgnoreLabel, 7, IgnoreLabel, IgnoreLabel, 33, IgnoreLabel, IgnoreLabel, 12, 12, IgnoreLabel}
	lab := ts.MustOfSlice(labels).MustView([]int64{b, T}, true)
	hidden := doubleLeaf(pseudo(b*T*h, 11, 2), []int64{b, T, h})

	loss, err := MLMLossFromHidden(m, hidden, lab)
	if err != nil {
		t.Fatal(err)
	}
	if loss.DType() != gotch.Double {
		t.Fatalf("loss dtype %v, want float64", loss.DType())
	}
	logits, err := m.MLMLogits(hidden.MustView([]int64{b * T, h}, false))
	if err != nil {
		t.Fatal(err)
	}
	want := mlmByLoops(logits.MustDetach(false).Float64Values(), v, labels)
	if got := loss.Float64Values()[0]; math.Abs(got-want) > 1e-12 {
		t.Errorf("loss %.15g, the equation gives %.15g", got, want)
	}
	checkGradient(t, hidden, func(x *ts.Tensor) *ts.Tensor {
		l, err := MLMLossFromHidden(m, x, lab)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
	// Unchosen positions do not move the loss: their gradient is zero.
	g := hidden.MustGrad(false).MustView([]int64{b * T, h}, false).MustAbs(true).MustSumDimIntlist([]int64{1}, false, gotch.Double, true).Float64Values()
	for p, l := range labels {
		if (l == IgnoreLabel) != (g[p] == 0) {
			t.Errorf("position %d (label %d): gradient norm %g", p, l, g[p])
		}
	}
}

// MLMLoss is the encoder followed by MLMLossFromHidden; a batch without a chosen token, a model without an
// MLM head and mismatched labels are errors.
func TestMLMLossEncoderAndErrors(t *testing.T) {
	m := tinyMLMBERT(t, 4, false)
	in := paddedInput([][]int64{{2, 7, 9, 3}, {2, 11, 3}}, 4)
	lab := ts.MustOfSlice([]int64{IgnoreLabel, 7, IgnoreLabel, IgnoreLabel, IgnoreLabel, 11, IgnoreLabel, IgnoreLabel}).MustView([]int64{2, 4}, true)
	loss, err := MLMLoss(m, in, lab, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(in, false)
	if err != nil {
		t.Fatal(err)
	}
	again, err := MLMLossFromHidden(m, out.Last, lab)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := loss.Float64Values()[0], again.Float64Values()[0]; a != b || !(a > 0) {
		t.Errorf("MLMLoss %g, from the encoder's output %g", a, b)
	}
	none := ts.MustFull([]int64{2, 4}, ts.IntScalar(IgnoreLabel), gotch.Int64, gotch.CPU)
	if _, err := MLMLoss(m, in, none, false); err == nil {
		t.Error("a batch without a chosen token gave no error")
	}
	if _, err := MLMLoss(m, in, ts.MustOfSlice([]int64{1, 2}), false); err == nil {
		t.Error("labels of the wrong shape gave no error")
	}
	if _, err := MLMLoss(tinyBERT(t, 1), in, lab, false); err == nil {
		t.Error("a model without an MLM head gave no error")
	}
}

// The objectives are chosen by name; mlm and rcl ask for the MLM head and the role tokens, simcse for
// nothing; a model without the head is refused.
func TestObjectivesOfEngineerAByName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mlm    bool
		tokens []string
	}{
		{"mlm", true, []string{"[USR]", "[SYS]"}},
		{"RCL", true, []string{"[USR]", "[SYS]"}},
		{"simcse", false, nil},
	} {
		req := RequirementsOf(tc.name)
		if req.Heads.MLM != tc.mlm || !slices.Equal(req.SpecialTokens, tc.tokens) {
			t.Errorf("%s requires %+v", tc.name, req)
		}
		o, err := New(tc.name, tinyMLMBERT(t, 5, false), Settings{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if o.Name() == "" {
			t.Errorf("%s: empty name", tc.name)
		}
		if tc.mlm {
			if _, err := New(tc.name, tinyBERT(t, 5), Settings{}); err == nil {
				t.Errorf("%s built on a model without an MLM head", tc.name)
			}
		}
	}
	for _, tc := range []struct {
		name string
		s    Settings
	}{
		{"mlm", Settings{"mask_prob": 0.0}},
		{"mlm", Settings{"mask_prob": 1.5}},
		{"mlm", Settings{"mask_porb": 0.15}},
		{"rcl", Settings{"mlm_weight": -1.0}},
		{"rcl", Settings{"temperature": 0.05}},
		{"simcse", Settings{"temperature": 0.0}},
		{"simcse", Settings{"pooler": "max"}},
	} {
		if _, err := New(tc.name, tinyMLMBERT(t, 5, false), tc.s); err == nil {
			t.Errorf("%s with %v: no error", tc.name, tc.s)
		}
	}
	// RCL alone (mlm_weight 0) needs no MLM head.
	if _, err := New("rcl", tinyBERT(t, 5), Settings{"mlm_weight": 0.0}); err != nil {
		t.Errorf("rcl without MLM: %v", err)
	}
}

// A few optimiser steps of plain SGD on one batch lower each objective's loss (the loss is wired to the
// encoder), with dropout on.
func TestObjectivesOfEngineerALearn(t *testing.T) {
	ctx := paddedInput([][]int64{{2, 7, 9, 8, 3}, {2, 11, 12, 3}, {2, 5, 6, 8, 3}, {2, 40, 41, 42, 3}}, 5)
	resp := paddedInput([][]int64{{2, 20, 21, 3}, {2, 22, 3}, {2, 23, 24, 25, 3}, {2, 30, 3}}, 4)
	lab := ts.MustOfSlice([]int64{
		IgnoreLabel, 7, IgnoreLabel, IgnoreLabel, IgnoreLabel,
		IgnoreLabel, IgnoreLabel, 12, IgnoreLabel, IgnoreLabel,
		IgnoreLabel, 5, IgnoreLabel, 8, IgnoreLabel,
		IgnoreLabel, IgnoreLabel, 41, IgnoreLabel, IgnoreLabel}).MustView([]int64{4, 5}, true)
	for _, tc := range []struct {
		name  string
		s     Settings
		batch any
		lr    float64
	}{
		{"mlm", Settings{}, MLMBatch{Input: ctx, Labels: lab}, 0.5},
		{"rcl", Settings{}, RCLBatch{Context: ctx, Labels: lab, Response: resp}, 0.5},
		// At initialisation a tiny random BERT gives every sentence nearly the same [CLS] vector, so the
		// cls pooler needs far more than a few steps; mean pooling shows the loss is wired in a few.
		{"simcse", Settings{"pooler": "avg"}, DSEBatch{Query: ctx, Response: ctx}, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tinyMLMBERT(t, 9, false)
			o, err := New(tc.name, m, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			// The mean of the first and of the last three steps: dropout makes single steps noisy.
			var first, last float64
			const steps = 15
			for step := 0; step < steps; step++ {
				if err := torch.ManualSeed(uint64(step)); err != nil {
					t.Fatal(err)
				}
				l, _, err := o.Loss(tc.batch, true)
				if err != nil {
					t.Fatal(err)
				}
				v := l.Float64Values()[0] / 3
				if step < 3 {
					first += v
				}
				if step >= steps-3 {
					last += v
				}
				l.MustBackward()
				torch.NoGrad(func() error {
					for _, p := range m.VS.TrainableVariables() {
						g := p.MustGrad(false)
						if g.MustDefined() {
							step := g.MustMulScalar(ts.FloatScalar(tc.lr), false)
							p.MustSub_(step)
							step.MustDrop()
							g.MustZero_()
						}
					}
					return nil
				})
			}
			t.Logf("%s: loss %.4f → %.4f", tc.name, first, last)
			if !(last < first) {
				t.Errorf("loss did not fall: %.4f → %.4f", first, last)
			}
		})
	}
}
