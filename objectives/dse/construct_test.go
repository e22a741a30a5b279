package dse

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convrep/datasets"
)

// Turn texts of the hand-made dialogues; word counts in comments.
const (
	toyU0 = "I am looking for restaurants."  // 5
	toyU1 = "What type of food do you like?" // 7
	toyU2 = "ok"                             // 1
	toyU3 = "I want some pizza please."      // 5
	toyU4 = "Domino's is a good place for pizza."
	toyU5 = "Any   Korean food nearby?" // 4, given with surrounding space
	toyU6 = "Sorry, there is no Korean restaurant."
	toyV1 = "Korean food, please, thank you."
)

func toyDialogues() []datasets.Dialogue {
	turns := func(texts ...string) []datasets.Turn {
		var ts []datasets.Turn
		for i, s := range texts {
			sp := datasets.User
			if i%2 == 1 {
				sp = datasets.System
			}
			ts = append(ts, datasets.Turn{Speaker: sp, Text: s})
		}
		return ts
	}
	return []datasets.Dialogue{
		{ID: "d1", Corpus: "toy", Turns: turns(toyU0, toyU1, toyU2, toyU3, toyU4, "  "+toyU5+"\n", toyU6)},
		{ID: "d2", Corpus: "toy2", Turns: turns(toyU1, toyV1, "")},
	}
}

// p builds an expected pair of dialogue d1 ("toy") or d2 ("toy2").
func wantPair(dialogue, q, r string) datasets.Pair {
	corpus := map[string]string{"d1": "toy", "d2": "toy2"}[dialogue]
	k := 1 + strings.Count(q, "[SEP]") + strings.Count(q, "</s>") // the toy utterances hold neither separator
	return datasets.Pair{Query: q, Response: r, Dialogue: dialogue, Corpus: corpus, QueryUtterances: k}
}

func joinUtts(sep string, us ...string) string { return strings.Join(us, sep) }

func TestDSEPairs(t *testing.T) {
	s := DefaultSep
	tests := []struct {
		name string
		opt  PairOptions
		want []datasets.Pair
	}{
		{"dse min3", PairOptions{Variant: VariantDSE, MinWords: 3}, []datasets.Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"default variant is dse", PairOptions{MinWords: 3}, []datasets.Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"dse both directions", PairOptions{Variant: VariantDSE, MinWords: 3, BothDirections: true}, []datasets.Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU1, toyU0), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU3),
			wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU4), wantPair("d1", toyU5, toyU6), wantPair("d1", toyU6, toyU5),
			wantPair("d2", toyU1, toyV1), wantPair("d2", toyV1, toyU1),
		}},
		{"dse min0 keeps short, drops empty", PairOptions{Variant: VariantDSE, MinWords: 0}, []datasets.Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU1, toyU2), wantPair("d1", toyU2, toyU3), wantPair("d1", toyU3, toyU4),
			wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"dse min5 drops 5-word utterances", PairOptions{Variant: VariantDSE, MinWords: 5}, nil},
		{"dse2-1", PairOptions{Variant: VariantDSE21, MinWords: 3}, []datasets.Pair{
			wantPair("d1", joinUtts(s, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU4, toyU5), toyU6),
		}},
		{"dse2-1 both directions stays forward", PairOptions{Variant: VariantDSE21, MinWords: 3, BothDirections: true}, []datasets.Pair{
			wantPair("d1", joinUtts(s, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU4, toyU5), toyU6),
		}},
		{"dse3-1", PairOptions{Variant: VariantDSE31, MinWords: 3}, []datasets.Pair{
			wantPair("d1", joinUtts(s, toyU3, toyU4, toyU5), toyU6),
		}},
		{"dse3-1 min0", PairOptions{Variant: VariantDSE31}, []datasets.Pair{
			wantPair("d1", joinUtts(s, toyU0, toyU1, toyU2), toyU3), wantPair("d1", joinUtts(s, toyU1, toyU2, toyU3), toyU4),
			wantPair("d1", joinUtts(s, toyU2, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU3, toyU4, toyU5), toyU6),
		}},
		{"dse2-1 custom sep", PairOptions{Variant: VariantDSE21, MinWords: 3, Sep: datasets.SepFor("</s>")}, []datasets.Pair{
			wantPair("d1", toyU3+" </s> "+toyU4, toyU5), wantPair("d1", toyU4+" </s> "+toyU5, toyU6),
		}},
		{"dse123-1", PairOptions{Variant: VariantDSE123, MinWords: 3}, []datasets.Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d1", joinUtts(s, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU4, toyU5), toyU6),
			wantPair("d1", joinUtts(s, toyU3, toyU4, toyU5), toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"dropout dedups across dialogues", PairOptions{Variant: VariantDropout, MinWords: 3}, []datasets.Pair{
			wantPair("d1", toyU0, toyU0), wantPair("d1", toyU1, toyU1), wantPair("d1", toyU3, toyU3), wantPair("d1", toyU4, toyU4),
			wantPair("d1", toyU5, toyU5), wantPair("d1", toyU6, toyU6), wantPair("d2", toyV1, toyV1),
		}},
		{"dropout min4", PairOptions{Variant: VariantDropout, MinWords: 4}, []datasets.Pair{
			wantPair("d1", toyU0, toyU0), wantPair("d1", toyU1, toyU1), wantPair("d1", toyU3, toyU3), wantPair("d1", toyU4, toyU4),
			wantPair("d1", toyU6, toyU6), wantPair("d2", toyV1, toyV1),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DSEPairs(toyDialogues(), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %d pairs:\n%s\nwant %d:\n%s", len(got), dumpPairs(got), len(tc.want), dumpPairs(tc.want))
			}
		})
	}
}

func dumpPairs(ps []datasets.Pair) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.Dialogue + "/" + p.Corpus + ": " + p.Query + " => " + p.Response + "\n")
	}
	return b.String()
}

func TestDSEPairsEdges(t *testing.T) {
	if _, err := DSEPairs(toyDialogues(), PairOptions{Variant: "dse4-1"}); err == nil {
		t.Error("unknown variant: no error")
	}
	for _, v := range []string{VariantDSE, VariantDSE21, VariantDSE31, VariantDSE123, VariantDropout} {
		got, err := DSEPairs(nil, PairOptions{Variant: v})
		if err != nil || len(got) != 0 {
			t.Errorf("%s on no dialogues: %d pairs, %v", v, len(got), err)
		}
		one := []datasets.Dialogue{{ID: "x", Turns: []datasets.Turn{{Text: "a single long enough turn"}}}}
		got, err = DSEPairs(one, PairOptions{Variant: v})
		want := 0
		if v == VariantDropout {
			want = 1
		}
		if err != nil || len(got) != want {
			t.Errorf("%s on a one-turn dialogue: %d pairs, want %d (%v)", v, len(got), want, err)
		}
	}
}

func TestPairOptionsNormalized(t *testing.T) {
	a := PairOptions{}.Normalized()
	b := PairOptions{Variant: VariantDSE, Sep: DefaultSep}.Normalized()
	if a != b {
		t.Errorf("defaults %+v differ from explicit %+v", a, b)
	}
	if c := (PairOptions{MinWords: -7}).Normalized(); c.MinWords != -1 {
		t.Errorf("MinWords -7 normalised to %d, want -1", c.MinWords)
	}
}

// The streaming pair count (datasets.PairCounter over a PairBuilder, as data check counts) equals DSEPairs'
// over the shipped example, read with its experiment's mapping.
func TestPairCounterIsDSEPairs(t *testing.T) {
	s := datasets.FileSet{Paths: []string{filepath.Join("..", "..", "examples", "own-dialogues", "support.csv")},
		Columns: datasets.Columns{Dialogue: "conversation_id", Speaker: "role", Text: "message", Domain: "topic"}}
	var ds []datasets.Dialogue
	if err := s.EachDialogue(datasets.ReadOptions{MergeSameSpeaker: true}, func(_ string, d datasets.Dialogue) error {
		ds = append(ds, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ds) != 41 {
		t.Fatalf("%d dialogues, want 41", len(ds))
	}
	for _, opt := range []PairOptions{{Variant: VariantDSE, MinWords: 3}, {Variant: VariantDSE123, MinWords: 3, BothDirections: true}, {Variant: VariantDropout, MinWords: 0}} {
		want, err := DSEPairs(append(ds, ds[:3]...), opt) // repeated dialogues: dropout counts each text once
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewPairBuilder(opt)
		if err != nil {
			t.Fatal(err)
		}
		c := datasets.NewPairCounter(b)
		n := 0
		for _, d := range append(ds, ds[:3]...) {
			n += c.Add(d)
		}
		if n != len(want) || n == 0 {
			t.Errorf("%s: counted %d pairs, DSEPairs builds %d", opt.Variant, n, len(want))
		}
	}
}
