package mgt

import (
	"math"
	"strings"
	"testing"

	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/internal/testutil"
)

func mgtSettings(extra map[string]any) objectives.Settings {
	s := objectives.Settings{"variant": "mgt", "segment": int64(2), "models": int64(3), "candidates": int64(2), "bucket_sample": int64(10)}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// mgtBatch is two contexts with two candidates each (the ground truth first), from the DSE test's tokens.
func mgtBatch() Batch {
	return Batch{Context: testutil.Input(testutil.Queries[:2], 6), Candidates: testutil.Input(testutil.Responses, 6), K: 2}
}

func TestMGTResponseEncoderStartsAsBackboneAndTrains(t *testing.T) {
	m := testutil.TinyBERT(t, 5)
	o, err := testutil.New("mgt", m, mgtSettings(nil))
	if err != nil {
		t.Fatal(err)
	}
	name := ResponsePrefix + ".bert.encoder.layer.1.attention.self.query.weight"
	r, err := m.VS.Root().Get(name)
	if err != nil {
		t.Fatalf("no %s in the VarStore: %v", name, err)
	}
	c := m.Params()["bert.encoder.layer.1.attention.self.query.weight"]
	if d := r.MustSub(c, false).MustAbs(true).MustMax(true).Float64Values(true)[0]; d != 0 {
		t.Fatalf("the response encoder starts %.3g away from the backbone", d)
	}
	b := mgtBatch()
	defer b.Context.Drop()
	defer b.Candidates.Drop()
	loss, mt, err := o.Loss(b, true)
	if err != nil {
		t.Fatal(err)
	}
	metrics := testutil.Metrics(t, mt)
	if v := loss.Float64Values()[0]; math.IsNaN(v) || v <= 0 {
		t.Fatalf("loss %v", v)
	}
	if h, ok := metrics["hits1"]; !ok || h < 0 || h > 1 {
		t.Fatalf("metrics %v", metrics)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if g := testutil.AbsSum(t, c.MustGrad(false)); g == 0 {
		t.Error("no gradient reached the context encoder")
	}
	if g := testutil.AbsSum(t, r.MustGrad(false)); g == 0 {
		t.Error("no gradient reached the response encoder")
	}
}

func TestMGTBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    objectives.Settings
		want string
	}{
		{"segment beyond L", mgtSettings(map[string]any{"segment": int64(4)}), "segment"},
		{"no segment", objectives.Settings{"variant": "mgt"}, "segment"},
		{"member on mgt", mgtSettings(map[string]any{"member": int64(1)}), "member"},
		{"ensemble without member", objectives.Settings{"variant": "ensemble"}, "member"},
		{"single with segment", objectives.Settings{"variant": "single", "segment": int64(1)}, "single"},
		{"one candidate", mgtSettings(map[string]any{"candidates": int64(1)}), "candidates"},
		{"sample too small", mgtSettings(map[string]any{"candidates": int64(20)}), "bucket_sample"},
		{"unknown key", mgtSettings(map[string]any{"segmnet": int64(1)}), "segmnet"},
		{"unknown variant", objectives.Settings{"variant": "mtg"}, "variant"},
		{"bad pooling", mgtSettings(map[string]any{"pooling": "max"}), "pooling"},
		{"segment encoder on single", objectives.Settings{"variant": "single", "segment_encoder": "runs/x"}, "segment_encoder"},
		{"old bucket_encoder key", mgtSettings(map[string]any{"bucket_encoder": "runs/x"}), "bucket_encoder"},
		{"near-duplicate cosine above 1", mgtSettings(map[string]any{"near_duplicate_cosine": 1.5}), "near_duplicate_cosine"},
		{"negative near-duplicate cosine", mgtSettings(map[string]any{"near_duplicate_cosine": -0.1}), "near_duplicate_cosine"},
		{"near-duplicates on single", objectives.Settings{"variant": "single", "near_duplicate_cosine": 0.9}, "near_duplicate_cosine"},
		{"centred without a ceiling", mgtSettings(map[string]any{"near_duplicate_centred": true}), "near_duplicate_centred"},
		{"centred not a bool", mgtSettings(map[string]any{"near_duplicate_cosine": 0.9, "near_duplicate_centred": 1}), "near_duplicate_centred"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	for _, s := range []objectives.Settings{{"variant": "single"}, {"variant": "ensemble", "member": int64(5)}, mgtSettings(nil),
		mgtSettings(map[string]any{"near_duplicate_cosine": 0.9}), mgtSettings(map[string]any{"near_duplicate_cosine": 0.9, "near_duplicate_centred": true})} {
		if _, err := Parse(s); err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
}

func TestEnsembleProbabilities(t *testing.T) {
	m1 := testutil.TinyBERT(t, 1)
	m2 := testutil.TinyBERT(t, 2)
	r1 := testutil.TinyBERT(t, 3)
	b := mgtBatch()
	defer b.Context.Drop()
	defer b.Candidates.Drop()
	one := DualEncoder{Context: m1, Response: r1, Pooling: models.Mean}
	two := DualEncoder{Context: m2, Response: r1, Pooling: models.CLS}
	p1, err := one.Probabilities(b.Context, b.Candidates, b.K)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := two.Probabilities(b.Context, b.Candidates, b.K)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EnsembleProbabilities([]DualEncoder{one, two}, b.Context, b.Candidates, b.K)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		sum := 0.0
		for j := range got[i] {
			if want := (p1[i][j] + p2[i][j]) / 2; math.Abs(got[i][j]-want) > 1e-12 {
				t.Errorf("context %d candidate %d: %v, want the members' mean %v", i, j, got[i][j], want)
			}
			sum += got[i][j]
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("context %d: probabilities sum to %v", i, sum)
		}
	}
	if _, err := EnsembleProbabilities([]DualEncoder{one}, b.Context, b.Candidates, 3); err == nil {
		t.Error("4 candidate rows split into groups of 3")
	}
}
