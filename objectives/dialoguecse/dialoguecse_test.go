package dialoguecse

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/internal/testutil"
)

// A batch of three examples: responses, five context utterances, and which belong to whom.
var (
	cseResponses = [][]int64{{2, 12, 13, 14, 3}, {2, 7, 3}, {2, 20, 21, 22, 23, 3}}
	cseContext   = [][]int64{{2, 7, 9, 3}, {2, 11, 3}, {2, 5, 6, 8, 3}, {2, 40, 41, 3}, {2, 30, 31, 32, 3}}
	cseContextOf = [][]int{{0, 1}, {2, 3, 4}, {1}}
	cseNegatives = [][]int{{1}, {0, 2}, {0, 1}}
)

func cseBatch(ctxRows [][]int64, contextOf [][]int) Batch {
	return Batch{Responses: testutil.Input(cseResponses, 7), Context: testutil.Input(ctxRows, 6), ContextOf: contextOf, Negatives: cseNegatives}
}

func newCSEObjective(t *testing.T, m *models.Model, s objectives.Settings) objectives.Objective {
	t.Helper()
	o, err := testutil.New("DialogueCSE", m, s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestDialogueCSETrainsEncoder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings objectives.Settings
	}{
		{"I2", objectives.Settings{"freeze_layers": int64(0)}},
		{"I1", objectives.Settings{"freeze_layers": int64(1), "aggregation": "I1", "attention_hidden": int64(8), "temperature": 0.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testutil.TinyBERT(t, 11)
			o := newCSEObjective(t, m, tc.settings)
			b := cseBatch(cseContext, cseContextOf)
			loss, mt, err := o.Loss(&b, true)
			if err != nil {
				t.Fatal(err)
			}
			metrics := testutil.Metrics(t, mt)
			v := loss.Float64Values()[0]
			// With three candidates at most, −log of a softmax share lies in (0, log 3 + 2/τ].
			if !(v > 0) || v > math.Log(3)+2/0.1 {
				t.Fatalf("loss %v out of range", v)
			}
			for _, k := range []string{"pos_cos", "neg_cos"} {
				if c, ok := metrics[k]; !ok || c < -1-1e-6 || c > 1+1e-6 {
					t.Fatalf("metrics %v: want %s in [-1, 1]", metrics, k)
				}
			}
			if math.Abs(metrics["negatives"]-5.0/3) > 1e-6 {
				t.Fatalf("metrics %v: want 5/3 negatives per example", metrics)
			}
			loss.MustBackward()
			enc := m.Params()["bert.encoder.layer.1.attention.self.query.weight"]
			if g := testutil.AbsSum(t, enc.MustGrad(false)); g == 0 {
				t.Error("the encoder got no gradient")
			}
			w, err := m.VS.Root().Get("dialoguecse_attention.0.weight")
			if (err == nil) != (tc.name == "I1") {
				t.Fatalf("attention FFN present: %v, want it only for I1", err == nil)
			}
			if err == nil {
				if s := w.MustSize(); s[0] != 8 || s[1] != 16 {
					t.Errorf("FFN first layer is %v, want [8 16]", s)
				}
				if g := testutil.AbsSum(t, w.MustGrad(false)); g == 0 {
					t.Error("the attention FFN got no gradient")
				}
			}
			// The embeddings and the bottom freeze_layers layers are declared frozen, and nothing else.
			frozen := map[string]bool{}
			for _, g := range o.Groups() {
				for _, name := range g.Params {
					frozen[name] = g.Rate == objectives.Frozen
				}
			}
			n := int(tc.settings["freeze_layers"].(int64))
			for name := range m.Params() {
				want := n > 0 && strings.HasPrefix(name, "bert.embeddings.")
				for i := range n {
					want = want || strings.HasPrefix(name, fmt.Sprintf("bert.encoder.layer.%d.", i))
				}
				if frozen[name] != want {
					t.Errorf("%s frozen: %v, want %v (freeze_layers %d)", name, frozen[name], want, n)
				}
			}
		})
	}
}

// The context rows may come in any order: the batch's lists say which is whose. Unused rows change nothing.
func TestDialogueCSEContextRowsGathered(t *testing.T) {
	m := testutil.TinyBERT(t, 12)
	for _, agg := range []string{"mean", "attention"} {
		o := newCSEObjective(t, m, objectives.Settings{"freeze_layers": int64(0), "aggregation": agg})
		eval := func(b Batch) float64 {
			loss, _, err := o.Loss(b, false)
			if err != nil {
				t.Fatal(err)
			}
			return loss.Float64Values(true)[0]
		}
		ref := eval(cseBatch(cseContext, cseContextOf))
		perm := []int{3, 0, 4, 2, 1}                    // new row k holds old row perm[k]
		at := map[int]int{3: 0, 0: 1, 4: 2, 2: 3, 1: 4} // old row → new row
		rows := [][]int64{}
		for _, k := range perm {
			rows = append(rows, cseContext[k])
		}
		rows = append(rows, []int64{2, 44, 45, 3}) // an unused row
		var of [][]int
		for _, c := range cseContextOf {
			var l []int
			for _, k := range c {
				l = append(l, at[k])
			}
			of = append(of, l)
		}
		if got := eval(cseBatch(rows, of)); math.Abs(got-ref) > 1e-5 {
			t.Fatalf("%s: permuted context rows give %g, want %g", agg, got, ref)
		}
		// Giving example 0 another context changes its loss: the context is used.
		swapped := [][]int{{2, 3}, {2, 3, 4}, {1}}
		if got := eval(cseBatch(cseContext, swapped)); math.Abs(got-ref) < 1e-7 {
			t.Fatalf("%s: another context gives the same loss %g", agg, got)
		}
	}
}

func TestDialogueCSEBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings objectives.Settings
		want     string
	}{
		{"unknown key", objectives.Settings{"freeze_layers": int64(0), "negative": int64(4)}, "negative"},
		{"paper's freeze on a 2-layer model", objectives.Settings{}, "freeze_layers = 6"},
		{"freeze all", objectives.Settings{"freeze_layers": int64(2)}, "at least one must train"},
		{"negative freeze", objectives.Settings{"freeze_layers": int64(-1)}, "freeze_layers"},
		{"unknown aggregation", objectives.Settings{"freeze_layers": int64(0), "aggregation": "max"}, "max"},
		{"no negatives", objectives.Settings{"freeze_layers": int64(0), "negatives": int64(0)}, "negatives"},
		{"no context", objectives.Settings{"freeze_layers": int64(0), "context_turns": int64(0)}, "context_turns"},
		{"one-turn dialogues", objectives.Settings{"freeze_layers": int64(0), "min_turns": int64(1)}, "min_turns"},
		{"zero temperature", objectives.Settings{"freeze_layers": int64(0), "temperature": 0.0}, "temperature"},
		{"FFN width for I2", objectives.Settings{"freeze_layers": int64(0), "attention_hidden": int64(8)}, "attention_hidden"},
		{"fractional negatives", objectives.Settings{"freeze_layers": int64(0), "negatives": 4.5}, "negatives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testutil.New("dialoguecse", testutil.TinyBERT(t, 13), tc.settings)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	c, err := Parse(nil)
	if err != nil || c.Temperature != 0.1 || c.Negatives != 9 || c.ContextTurns != 3 || c.FreezeLayers != 6 || c.Aggregation != TurnMean {
		t.Fatalf("defaults %+v (%v), want the paper's τ 0.1, 9 negatives, 3 turns, 6 frozen layers, I2", c, err)
	}
}

func TestDialogueCSEBadBatch(t *testing.T) {
	m := testutil.TinyBERT(t, 14)
	o := newCSEObjective(t, m, objectives.Settings{"freeze_layers": int64(0)})
	good := func() Batch { return cseBatch(cseContext, cseContextOf) }
	with := func(f func(*Batch)) Batch { b := good(); f(&b); return b }
	for _, tc := range []struct {
		name  string
		model *models.Model
		batch any
		want  string
	}{
		{"wrong type", m, struct{}{}, "want dialoguecse.Batch"},
		{"nil pointer", m, (*Batch)(nil), "nil batch"},
		{"no context", m, with(func(b *Batch) { b.Context = models.Input{} }), "need ids and a mask"},
		{"lists short", m, with(func(b *Batch) { b.ContextOf = b.ContextOf[:2] }), "3 responses but 2 context lists"},
		{"empty context", m, with(func(b *Batch) { b.ContextOf = [][]int{{0}, {}, {1}} }), "example 1 has no context"},
		{"context row out of range", m, with(func(b *Batch) { b.ContextOf = [][]int{{0}, {5}, {1}} }), "outside the 5 rows"},
		{"self as negative", m, with(func(b *Batch) { b.Negatives = [][]int{{0}, {0}, {0}} }), "negative 0"},
		{"repeated negative", m, with(func(b *Batch) { b.Negatives = [][]int{{1, 1}, {0}, {0}} }), "repeats"},
		{"no negative", m, with(func(b *Batch) { b.Negatives = [][]int{{1}, {}, {0}} }), "example 1 has no negative"},
		{"token outside the vocabulary", m, with(func(b *Batch) { b.Responses = testutil.Input([][]int64{{2, 99}, {2}, {2}}, 2) }), "outside the vocabulary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := o.Loss(tc.batch, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
