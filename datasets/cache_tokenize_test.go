package datasets

import (
	"fmt"
	"reflect"
	"testing"

	"convrep/internal/shared"
	"convrep/tokenizers"
)

func tinyBERTDir(t testing.TB) string {
	t.Helper()
	return shared.MustPath(t, "fixtures", "tiny-bert")
}

func tinyBERT(t testing.TB) *tokenizers.Tokenizer {
	t.Helper()
	tok, err := tokenizers.Load(tinyBERTDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// manyPairs is pairs of generated dialogues, odd texts among them, repeated with numbers so that several
// workers' chunks are exercised.
func manyPairs(t testing.TB, copies int) []Pair {
	t.Helper()
	var ds []Dialogue
	for d := range 8 {
		ds = append(ds, genDialogue(d))
	}
	base := append(nextPairs(t, append(ds, edgeDialogue()), 0, false), nextPairs(t, ds, 3, true)...)
	base = append(base,
		Pair{Query: "", Response: "[CLS] odd [SEP] specials [MASK]"},
		Pair{Query: "Café Ünïcode 東京 🍕", Response: "a\u00a0b\tc\nd"},
	)
	out := make([]Pair, 0, copies*len(base))
	for c := range copies {
		for _, p := range base {
			p.Query = fmt.Sprintf("%s %d", p.Query, c)
			out = append(out, p)
		}
	}
	return out
}

func to64(ids []int32) []int64 {
	out := make([]int64, len(ids))
	for i, v := range ids {
		out[i] = int64(v)
	}
	return out
}

func TestTokenizePairsEqualsEncode(t *testing.T) {
	tok := tinyBERT(t)
	pairs := manyPairs(t, 40) // > 2 chunks of 256
	for _, workers := range []int{1, 3, 0} {
		tp, err := TokenizePairs(pairs, tok, 0, tokenizers.TruncateRight, workers)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Len() != len(pairs) || len(tp.Response) != len(pairs) {
			t.Fatalf("workers %d: %d/%d rows for %d pairs", workers, len(tp.Query), len(tp.Response), len(pairs))
		}
		for i, p := range pairs {
			for side, text := range map[string]string{"query": p.Query, "response": p.Response} {
				want, err := tok.Encode(text)
				if err != nil {
					t.Fatal(err)
				}
				got := tp.Query[i]
				if side == "response" {
					got = tp.Response[i]
				}
				if !reflect.DeepEqual(to64(got), want) {
					t.Fatalf("workers %d pair %d %s %q: %v, want Encode's %v", workers, i, side, text, got, want)
				}
			}
		}
	}
}

func TestTokenizePairsErrors(t *testing.T) {
	tok := tinyBERT(t)
	pairs := manyPairs(t, 1)
	if _, err := TokenizePairs(pairs, nil, 0, tokenizers.TruncateRight, 1); err == nil {
		t.Error("nil tokenizer: no error")
	}
	if _, err := TokenizePairs(pairs, tok, -1, tokenizers.TruncateRight, 1); err == nil {
		t.Error("negative max length: no error")
	}
	// One id does not leave room for [CLS] and [SEP].
	if _, err := TokenizePairs(pairs, tok, 1, tokenizers.TruncateRight, 2); err == nil {
		t.Error("max length 1: no error")
	}
	tp, err := TokenizePairs(nil, tok, 0, tokenizers.TruncateRight, 4)
	if err != nil || tp.Len() != 0 {
		t.Errorf("no pairs: %v, %v", tp, err)
	}
}
