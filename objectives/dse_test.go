package objectives

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/trainer/optim"
)

// gradOn pins the test's goroutine to its OS thread and turns grad mode on there. Grad mode is per thread,
// and gotch's initialisers (used by models.New) toggle it with ts.NoGrad on whichever thread they run, so
// an unpinned goroutine can land on a thread that an earlier one left with grad off.
func gradOn(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if _, err := ts.GradSetEnabled(true); err != nil {
		t.Fatal(err)
	}
}

func tinyBERT(t *testing.T, seed uint64) *models.Model {
	t.Helper()
	gradOn(t)
	if err := torch.ManualSeed(seed); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: 50, HiddenSize: 16, NumLayers: 2, NumHeads: 2,
		IntermediateSize: 32, HiddenAct: "gelu", HiddenDropout: 0.1, AttentionDropout: 0.1, MaxPositions: 32,
		TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02, TieWordEmbeddings: true}
	m, err := models.New(c, models.Heads{}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// paddedInput builds an Input from token rows, Padded with id 0 to length.
func paddedInput(rows [][]int64, length int) models.Input {
	var ids, mask []int64
	for _, r := range rows {
		for i := 0; i < length; i++ {
			if i < len(r) {
				ids, mask = append(ids, r[i]), append(mask, 1)
			} else {
				ids, mask = append(ids, 0), append(mask, 0)
			}
		}
	}
	shape := []int64{int64(len(rows)), int64(length)}
	return models.Input{IDs: ts.MustOfSlice(ids).MustView(shape, true), Mask: ts.MustOfSlice(mask).MustView(shape, true)}
}

var (
	queries   = [][]int64{{2, 7, 9, 3}, {2, 11, 3}, {2, 5, 6, 8, 3}, {2, 40, 41, 3}}
	responses = [][]int64{{2, 12, 13, 14, 3}, {2, 7, 3}, {2, 20, 21, 22, 23, 3}, {2, 30, 3}}
)

func newDSEObjective(t *testing.T, m *models.Model, s Settings) Objective {
	t.Helper()
	o, err := New("DSE", m, s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func absSum(t *testing.T, x *ts.Tensor) float64 {
	t.Helper()
	if x == nil || !x.MustDefined() {
		return 0
	}
	return x.MustAbs(false).MustSum(gotch.Double, true).Float64Values(true)[0]
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
		settings Settings
		qLen     int
		rLen     int
		pairsimi []int64
	}{
		{"hardneg, views of one length", Settings{}, 6, 6, nil},
		{"hardneg, views of two lengths", Settings{"mode": "HardNeg"}, 5, 7, nil},
		{"orig, pairsimi", Settings{"mode": "orig", "temperature": 0.1, "head_dim": int64(8)}, 6, 6, []int64{1, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tinyBERT(t, 1)
			o := newDSEObjective(t, m, tc.settings)
			b := DSEBatch{Query: paddedInput(queries, tc.qLen), Response: paddedInput(responses, tc.rLen)}
			if tc.pairsimi != nil {
				b.PairSimi = ts.MustOfSlice(tc.pairsimi)
			}
			loss, metrics, err := o.Loss(&b, true)
			if err != nil {
				t.Fatal(err)
			}
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
			if g := absSum(t, enc.MustGrad(false)); g == 0 {
				t.Error("the encoder got no gradient")
			}
			for i, w := range headWeights(t, m) {
				if g := absSum(t, w.MustGrad(false)); g == 0 {
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
	m := tinyBERT(t, 2)
	o := newDSEObjective(t, m, nil)
	var losses []float64
	for _, rLen := range []int{6, 8} { // 6 = the query length: one forward; 8: two
		loss, _, err := o.Loss(DSEBatch{Query: paddedInput(queries, 6), Response: paddedInput(responses, rLen)}, false)
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
	m := tinyBERT(t, 3)
	o := newDSEObjective(t, m, nil)
	rates := map[Rate]float64{EncoderRate: 0, HeadRate: 0.5}
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
	loss, _, err := o.Loss(DSEBatch{Query: paddedInput(queries, 6), Response: paddedInput(responses, 7)}, true)
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
	moved := func(i int, x *ts.Tensor) float64 { return maxDiff(x.Float64Values(), before[i]) }
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
		settings Settings
		want     string
	}{
		{"unknown key", Settings{"temprature": 0.05}, "temprature"},
		{"negative temperature", Settings{"temperature": -0.05}, "temperature"},
		{"zero temperature", Settings{"temperature": int64(0)}, "temperature"},
		{"temperature as text", Settings{"temperature": "0.05"}, "temperature"},
		{"unknown mode", Settings{"mode": "hardest"}, "hardest"},
		{"zero head_dim", Settings{"head_dim": int64(0)}, "head_dim"},
		{"fractional head_dim", Settings{"head_dim": 12.5}, "head_dim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("dse", tinyBERT(t, 4), tc.settings)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	m := tinyBERT(t, 4)
	newDSEObjective(t, m, nil)
	if _, err := New("dse", m, nil); err == nil || !strings.Contains(err.Error(), "already has a contrast_head") {
		t.Fatalf("second DSE head on one model: got %v", err)
	}
}

func TestDSEBadBatch(t *testing.T) {
	m := tinyBERT(t, 5)
	o := newDSEObjective(t, m, nil)
	for _, tc := range []struct {
		name  string
		model *models.Model
		batch any
		want  string
	}{
		{"wrong type", m, models.Input{}, "want objectives.DSEBatch"},
		{"nil pointer", m, (*DSEBatch)(nil), "nil batch"},
		{"no response", m, DSEBatch{Query: paddedInput(queries, 6)}, "both the query and the response"},
		{"uneven views", m, DSEBatch{Query: paddedInput(queries, 6), Response: paddedInput(responses[:3], 6)}, "4 queries but 3 responses"},
		{"one pair", m, DSEBatch{Query: paddedInput(queries[:1], 6), Response: paddedInput(responses[:1], 6)}, "no negatives"},
		{"pairsimi length", m, DSEBatch{Query: paddedInput(queries, 6), Response: paddedInput(responses, 6), PairSimi: ts.MustOfSlice([]int64{1, 1})}, "pairsimi must be [4]"},
		{"token outside the vocabulary", m, DSEBatch{Query: paddedInput([][]int64{{2, 99}, {2, 3}}, 2), Response: paddedInput([][]int64{{2, 3}, {2, 3}}, 2)}, "outside the vocabulary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := o.Loss(tc.batch, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
