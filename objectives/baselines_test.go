package objectives_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/dse"
	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"
	"convrep/objectives/mlm"
	"convrep/objectives/rcl"
	_ "convrep/objectives/simcse"
)

// The built-in objectives together: the registry knows them, and the baselines of one engineer are chosen
// by name and learn.

func TestBuiltinRegistry(t *testing.T) {
	if !slices.Contains(objectives.Names(), dse.Name) {
		t.Fatalf("objectives.Names() = %v, want it to hold %q", objectives.Names(), dse.Name)
	}
	if !slices.IsSorted(objectives.Names()) {
		t.Fatalf("objectives.Names() = %v, not sorted", objectives.Names())
	}
	if _, err := testutil.New("no-such-objective", &models.Model{}, nil); err == nil || !strings.Contains(err.Error(), "known: ") || !strings.Contains(err.Error(), dse.Name) {
		t.Fatalf("unknown name: got %v, want an error listing the known objectives", err)
	}
	if _, err := testutil.New(dse.Name, nil, nil); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Fatalf("nil model: got %v", err)
	}
	if _, err := objectives.Parse(map[string]any{"temperature": 0.1}); err == nil || !strings.Contains(err.Error(), "name is required") {
		t.Fatalf("no name: got %v", err)
	}
}

// The objectives are chosen by name; mlm and rcl ask for the MLM head and the role tokens, simcse for
// nothing; a model without the head is refused.
func TestBaselinesByName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mlm    bool
		tokens []string
	}{
		{"mlm", true, []string{"[USR]", "[SYS]"}},
		{"RCL", true, []string{"[USR]", "[SYS]"}},
		{"simcse", false, nil},
	} {
		req := testutil.RequirementsOf(tc.name)
		if req.Heads.MLM != tc.mlm || !slices.Equal(req.SpecialTokens, tc.tokens) {
			t.Errorf("%s requires %+v", tc.name, req)
		}
		o, err := testutil.New(tc.name, testutil.TinyMLMBERT(t, 5, false), objectives.Settings{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if o.Name() == "" {
			t.Errorf("%s: empty name", tc.name)
		}
		if tc.mlm {
			if _, err := testutil.New(tc.name, testutil.TinyBERT(t, 5), objectives.Settings{}); err == nil {
				t.Errorf("%s built on a model without an MLM head", tc.name)
			}
		}
	}
	for _, tc := range []struct {
		name string
		s    objectives.Settings
	}{
		{"mlm", objectives.Settings{"mask_prob": 0.0}},
		{"mlm", objectives.Settings{"mask_prob": 1.5}},
		{"mlm", objectives.Settings{"mask_porb": 0.15}},
		{"rcl", objectives.Settings{"mlm_weight": -1.0}},
		{"rcl", objectives.Settings{"temperature": 0.05}},
		{"simcse", objectives.Settings{"temperature": 0.0}},
		{"simcse", objectives.Settings{"pooler": "max"}},
	} {
		if _, err := testutil.New(tc.name, testutil.TinyMLMBERT(t, 5, false), tc.s); err == nil {
			t.Errorf("%s with %v: no error", tc.name, tc.s)
		}
	}
	// RCL alone (mlm_weight 0) needs no MLM head.
	if _, err := testutil.New("rcl", testutil.TinyBERT(t, 5), objectives.Settings{"mlm_weight": 0.0}); err != nil {
		t.Errorf("rcl without MLM: %v", err)
	}
}

// A few optimiser steps of plain SGD on one batch lower each objective's loss (the loss is wired to the
// encoder), with dropout on.
func TestBaselinesLearn(t *testing.T) {
	ctx := testutil.Input([][]int64{{2, 7, 9, 8, 3}, {2, 11, 12, 3}, {2, 5, 6, 8, 3}, {2, 40, 41, 42, 3}}, 5)
	resp := testutil.Input([][]int64{{2, 20, 21, 3}, {2, 22, 3}, {2, 23, 24, 25, 3}, {2, 30, 3}}, 4)
	const x = inputs.IgnoreLabel
	lab := testutil.Labels(t, [][]int64{{x, 7, x, x, x}, {x, x, 12, x, x}, {x, 5, x, 8, x}, {x, x, 41, x, x}})
	for _, tc := range []struct {
		name  string
		s     objectives.Settings
		batch any
		lr    float64
	}{
		{"mlm", objectives.Settings{}, mlm.Batch{Input: ctx, Labels: lab}, 0.5},
		{"rcl", objectives.Settings{}, rcl.Batch{Context: ctx, Labels: lab, Response: resp}, 0.5},
		// At initialisation a tiny random BERT gives every sentence nearly the same [CLS] vector, so the
		// cls pooler needs far more than a few steps; mean pooling shows the loss is wired in a few.
		{"simcse", objectives.Settings{"pooler": "avg"}, dse.Batch{Query: ctx, Response: ctx}, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testutil.TinyMLMBERT(t, 9, false)
			o, err := testutil.New(tc.name, m, tc.s)
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
