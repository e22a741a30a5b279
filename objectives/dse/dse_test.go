package dse

import (
	"math"
	"strings"
	"testing"

	"github.com/sugarme/gotch/ts"

	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/internal/testutil"
	"convrep/trainer/optim"
)

func newDSEObjective(t *testing.T, m *models.Model, s objectives.Settings) objectives.Objective {
	t.Helper()
	o, err := testutil.New("DSE", m, s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func headWeights(t *testing.T, m *models.Model) []*ts.Tensor {
	t.Helper()
	var out []*ts.Tensor
	for _, name := range []string{"contrast_head.0.weight", "contrast_head.2.weight"} {
		w, err := m.VS.Root().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

func TestDSELossTrainsEncoderAndHead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings objectives.Settings
		qLen     int
		rLen     int
		pairsimi []int64
	}{
		{"hardneg, views of one length", objectives.Settings{}, 6, 6, nil},
		{"hardneg, views of two lengths", objectives.Settings{"mode": "HardNeg"}, 5, 7, nil},
		{"orig, pairsimi", objectives.Settings{"mode": "orig", "temperature": 0.1, "head_dim": int64(8)}, 6, 6, []int64{1, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testutil.TinyBERT(t, 1)
			o := newDSEObjective(t, m, tc.settings)
			b := Batch{Query: testutil.Input(testutil.Queries, tc.qLen), Response: testutil.Input(testutil.Responses, tc.rLen)}
			if tc.pairsimi != nil {
				b.PairSimi = ts.MustOfSlice(tc.pairsimi)
			}
			loss, mt, err := o.Loss(&b, true)
			if err != nil {
				t.Fatal(err)
			}
			metrics := testutil.Metrics(t, mt)
			v := loss.Float64Values()
			if len(v) != 1 || math.IsNaN(v[0]) || math.IsInf(v[0], 0) || v[0] <= 0 {
				t.Fatalf("loss %v: want one finite positive number", v)
			}
			if c, ok := metrics["pos_cos"]; !ok || c < -1-1e-6 || c > 1+1e-6 {
				t.Fatalf("metrics %v: want pos_cos in [-1, 1]", metrics)
			}
			loss.MustBackward()
			loss.MustDrop()
			enc := m.Params()["bert.encoder.layer.0.attention.self.query.weight"]
			if g := testutil.AbsSum(t, enc.MustGrad(false)); g == 0 {
				t.Error("the encoder got no gradient")
			}
			for i, w := range headWeights(t, m) {
				if g := testutil.AbsSum(t, w.MustGrad(false)); g == 0 {
					t.Errorf("contrast head layer %d got no gradient", i)
				}
			}
			if s := headWeights(t, m)[1].MustSize(); s[0] != map[bool]int64{true: 8, false: 128}[tc.name == "orig, pairsimi"] || s[1] != 16 {
				t.Errorf("second head layer has shape %v", s)
			}
		})
	}
}

// Views of one length run through the encoder as one batch, others one by one; both give one loss.
func TestDSEOneOrTwoForwardsAgree(t *testing.T) {
	m := testutil.TinyBERT(t, 2)
	o := newDSEObjective(t, m, nil)
	var losses []float64
	for _, rLen := range []int{6, 8} { // 6 = the query length: one forward; 8: two
		loss, _, err := o.Loss(Batch{Query: testutil.Input(testutil.Queries, 6), Response: testutil.Input(testutil.Responses, rLen)}, false)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss.Float64Values(true)[0])
	}
	if d := math.Abs(losses[0] - losses[1]); d > 1e-5 {
		t.Fatalf("losses %v differ by %g", losses, d)
	}
}

// The head is a group of its own at train.head_lr: with train.lr at 0 only the head moves.
func TestDSEHeadInItsOwnGroup(t *testing.T) {
	m := testutil.TinyBERT(t, 3)
	o := newDSEObjective(t, m, nil)
	rates := map[objectives.Rate]float64{objectives.EncoderRate: 0, objectives.HeadRate: 0.5}
	var groups []optim.Group
	for _, g := range o.Groups() {
		og := optim.Group{Name: g.Name, LR: rates[g.Rate]}
		for _, name := range g.Params {
			p, err := m.VS.Root().Get(name)
			if err != nil {
				t.Fatal(err)
			}
			og.Params, og.ParamNames = append(og.Params, p), append(og.ParamNames, name)
		}
		groups = append(groups, og)
	}
	if len(groups) != 2 || len(groups[1].Params) != 2 || len(groups[0].Params) != len(m.Params()) {
		t.Fatalf("groups %+v, want the encoder's %d tensors and the head's 2", o.Groups(), len(m.Params()))
	}
	opt, err := optim.New(optim.Config{Kind: "adam"}, groups)
	if err != nil {
		t.Fatal(err)
	}
	enc := m.Params()["bert.encoder.layer.1.output.dense.weight"]
	heads := headWeights(t, m)
	before := [][]float64{enc.Float64Values()}
	for _, w := range heads {
		before = append(before, w.Float64Values())
	}
	loss, _, err := o.Loss(Batch{Query: testutil.Input(testutil.Queries, 6), Response: testutil.Input(testutil.Responses, 7)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	loss.MustBackward()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	moved := func(i int, x *ts.Tensor) float64 { return testutil.MaxDiff(x.Float64Values(), before[i]) }
	if d := moved(0, enc); d != 0 {
		t.Errorf("the encoder moved by %g with learning rate 0", d)
	}
	for i, w := range heads {
		if d := moved(i+1, w); d == 0 {
			t.Errorf("contrast head layer %d did not move", i)
		}
	}
}

func TestDSEBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings objectives.Settings
		want     string
	}{
		{"unknown key", objectives.Settings{"temprature": 0.05}, "temprature"},
		{"negative temperature", objectives.Settings{"temperature": -0.05}, "temperature"},
		{"zero temperature", objectives.Settings{"temperature": int64(0)}, "temperature"},
		{"temperature as text", objectives.Settings{"temperature": "0.05"}, "temperature"},
		{"unknown mode", objectives.Settings{"mode": "hardest"}, "hardest"},
		{"zero head_dim", objectives.Settings{"head_dim": int64(0)}, "head_dim"},
		{"fractional head_dim", objectives.Settings{"head_dim": 12.5}, "head_dim"},
		{"unknown head_init", objectives.Settings{"head_init": "xavier"}, "head_init"},
		{"unknown query_cut", objectives.Settings{"query_cut": "tokens_right"}, "query_cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testutil.New("dse", testutil.TinyBERT(t, 4), tc.settings)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	m := testutil.TinyBERT(t, 4)
	newDSEObjective(t, m, nil)
	if _, err := testutil.New("dse", m, nil); err == nil || !strings.Contains(err.Error(), "already has a contrast_head") {
		t.Fatalf("second DSE head on one model: got %v", err)
	}
}

func TestDSEBadBatch(t *testing.T) {
	m := testutil.TinyBERT(t, 5)
	o := newDSEObjective(t, m, nil)
	for _, tc := range []struct {
		name  string
		model *models.Model
		batch any
		want  string
	}{
		{"wrong type", m, models.Input{}, "want dse.Batch"},
		{"nil pointer", m, (*Batch)(nil), "nil batch"},
		{"no response", m, Batch{Query: testutil.Input(testutil.Queries, 6)}, "both the query and the response"},
		{"uneven views", m, Batch{Query: testutil.Input(testutil.Queries, 6), Response: testutil.Input(testutil.Responses[:3], 6)}, "4 queries but 3 responses"},
		{"one pair", m, Batch{Query: testutil.Input(testutil.Queries[:1], 6), Response: testutil.Input(testutil.Responses[:1], 6)}, "no negatives"},
		{"pairsimi length", m, Batch{Query: testutil.Input(testutil.Queries, 6), Response: testutil.Input(testutil.Responses, 6), PairSimi: ts.MustOfSlice([]int64{1, 1})}, "pairsimi must be [4]"},
		{"token outside the vocabulary", m, Batch{Query: testutil.Input([][]int64{{2, 99}, {2, 3}}, 2), Response: testutil.Input([][]int64{{2, 3}, {2, 3}}, 2)}, "outside the vocabulary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := o.Loss(tc.batch, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
