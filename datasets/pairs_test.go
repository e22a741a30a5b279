package datasets

import (
	"reflect"
	"strings"
	"testing"
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

func toyDialogues() []Dialogue {
	turns := func(texts ...string) []Turn {
		var ts []Turn
		for i, s := range texts {
			sp := User
			if i%2 == 1 {
				sp = System
			}
			ts = append(ts, Turn{Speaker: sp, Text: s})
		}
		return ts
	}
	return []Dialogue{
		{ID: "d1", Corpus: "toy", Turns: turns(toyU0, toyU1, toyU2, toyU3, toyU4, "  "+toyU5+"\n", toyU6)},
		{ID: "d2", Corpus: "toy2", Turns: turns(toyU1, toyV1, "")},
	}
}

// p builds an expected pair of dialogue d1 ("toy") or d2 ("toy2").
func wantPair(dialogue, q, r string) Pair {
	corpus := map[string]string{"d1": "toy", "d2": "toy2"}[dialogue]
	k := 1 + strings.Count(q, "[SEP]") + strings.Count(q, "</s>") // the toy utterances hold neither separator
	return Pair{Query: q, Response: r, Dialogue: dialogue, Corpus: corpus, QueryUtterances: k}
}

func joinUtts(sep string, us ...string) string { return strings.Join(us, sep) }

func TestDSEPairs(t *testing.T) {
	s := DefaultSep
	tests := []struct {
		name string
		opt  PairOptions
		want []Pair
	}{
		{"dse min3", PairOptions{Variant: VariantDSE, MinWords: 3}, []Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"default variant is dse", PairOptions{MinWords: 3}, []Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"dse both directions", PairOptions{Variant: VariantDSE, MinWords: 3, BothDirections: true}, []Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU1, toyU0), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU3),
			wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU4), wantPair("d1", toyU5, toyU6), wantPair("d1", toyU6, toyU5),
			wantPair("d2", toyU1, toyV1), wantPair("d2", toyV1, toyU1),
		}},
		{"dse min0 keeps short, drops empty", PairOptions{Variant: VariantDSE, MinWords: 0}, []Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU1, toyU2), wantPair("d1", toyU2, toyU3), wantPair("d1", toyU3, toyU4),
			wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"dse min5 drops 5-word utterances", PairOptions{Variant: VariantDSE, MinWords: 5}, nil},
		{"dse2-1", PairOptions{Variant: VariantDSE21, MinWords: 3}, []Pair{
			wantPair("d1", joinUtts(s, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU4, toyU5), toyU6),
		}},
		{"dse2-1 both directions stays forward", PairOptions{Variant: VariantDSE21, MinWords: 3, BothDirections: true}, []Pair{
			wantPair("d1", joinUtts(s, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU4, toyU5), toyU6),
		}},
		{"dse3-1", PairOptions{Variant: VariantDSE31, MinWords: 3}, []Pair{
			wantPair("d1", joinUtts(s, toyU3, toyU4, toyU5), toyU6),
		}},
		{"dse3-1 min0", PairOptions{Variant: VariantDSE31}, []Pair{
			wantPair("d1", joinUtts(s, toyU0, toyU1, toyU2), toyU3), wantPair("d1", joinUtts(s, toyU1, toyU2, toyU3), toyU4),
			wantPair("d1", joinUtts(s, toyU2, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU3, toyU4, toyU5), toyU6),
		}},
		{"dse2-1 custom sep", PairOptions{Variant: VariantDSE21, MinWords: 3, Sep: SepFor("</s>")}, []Pair{
			wantPair("d1", toyU3+" </s> "+toyU4, toyU5), wantPair("d1", toyU4+" </s> "+toyU5, toyU6),
		}},
		{"dse123-1", PairOptions{Variant: VariantDSE123, MinWords: 3}, []Pair{
			wantPair("d1", toyU0, toyU1), wantPair("d1", toyU3, toyU4), wantPair("d1", toyU4, toyU5), wantPair("d1", toyU5, toyU6),
			wantPair("d1", joinUtts(s, toyU3, toyU4), toyU5), wantPair("d1", joinUtts(s, toyU4, toyU5), toyU6),
			wantPair("d1", joinUtts(s, toyU3, toyU4, toyU5), toyU6),
			wantPair("d2", toyU1, toyV1),
		}},
		{"dropout dedups across dialogues", PairOptions{Variant: VariantDropout, MinWords: 3}, []Pair{
			wantPair("d1", toyU0, toyU0), wantPair("d1", toyU1, toyU1), wantPair("d1", toyU3, toyU3), wantPair("d1", toyU4, toyU4),
			wantPair("d1", toyU5, toyU5), wantPair("d1", toyU6, toyU6), wantPair("d2", toyV1, toyV1),
		}},
		{"dropout min4", PairOptions{Variant: VariantDropout, MinWords: 4}, []Pair{
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

func dumpPairs(ps []Pair) string {
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
		one := []Dialogue{{ID: "x", Turns: []Turn{{Text: "a single long enough turn"}}}}
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

func TestWordCount(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a  b\tc\n", "Domino's is a good place", "a\u00a0b\u3000c\u0085d", "x\u200by"} {
		if got, want := wordCount(s), len(strings.Fields(s)); got != want {
			t.Errorf("wordCount(%q) = %d, want %d", s, got, want)
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
