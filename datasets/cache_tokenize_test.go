package datasets

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
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

// manyPairs is the toy pairs of every variant, repeated with numbers so
// that several workers' chunks are exercised.
func manyPairs(t testing.TB, copies int) []Pair {
	t.Helper()
	var base []Pair
	for _, v := range []string{VariantDSE123, VariantDropout} {
		ps, err := DSEPairs(toyDialogues(), PairOptions{Variant: v})
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, ps...)
	}
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

func TestTokenizePairsTruncates(t *testing.T) {
	tok := tinyBERT(t)
	pairs := manyPairs(t, 2)
	cls, _ := tok.TokenID("[CLS]")
	sep, _ := tok.TokenID("[SEP]")
	for _, c := range []struct {
		trunc tokenizers.Truncation
		cut   QueryCut
	}{
		{tokenizers.TruncateRight, QueryCutWords}, {tokenizers.TruncateLeft, QueryCutWords},
		{tokenizers.TruncateRight, QueryCutTokensLeft}, {tokenizers.TruncateLeft, QueryCutTokensLeft},
	} {
		trunc := c.trunc
		const maxLen = 8
		pairs := slices.Clone(pairs)
		for i := range pairs {
			pairs[i].QueryCut = c.cut
		}
		tp, err := TokenizePairs(pairs, tok, maxLen, trunc, 2)
		if err != nil {
			t.Fatal(err)
		}
		cut := 0
		for i, p := range pairs {
			// A k-1 query has k times the budget (TokenizePairs): with QueryCutTokensLeft it keeps its last
			// tokens; with QueryCutWords its last int(0.9·k·maxLen) words, then the tokenizer cuts its end.
			qLen, qTrunc, text := maxLen, trunc, p.Query
			if p.QueryUtterances > 1 {
				qLen, qTrunc = p.QueryUtterances*maxLen, tokenizers.TruncateLeft
				if c.cut == QueryCutWords {
					qTrunc = tokenizers.TruncateRight
					if w, keep := strings.Fields(text), int(0.9*float64(qLen)); len(w) > keep {
						text = strings.Join(w[len(w)-keep:], " ")
					}
				}
			}
			b, err := tok.EncodeBatch([]string{text}, tokenizers.BatchOptions{MaxLength: qLen, Truncation: qTrunc})
			if err != nil {
				t.Fatal(err)
			}
			want := b.InputIDs[0][:b.Lengths[0]]
			got := to64(tp.Query[i])
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("truncation %d, query cut %s, pair %d %q: %v, want %v", trunc, c.cut, i, p.Query, got, want)
			}
			if len(got) > qLen || got[0] != cls || got[len(got)-1] != sep {
				t.Fatalf("truncation %d pair %d: %v is not [CLS] … [SEP] within %d", trunc, i, got, qLen)
			}
			full, _ := tok.Encode(text)
			if len(full) > qLen {
				cut++
			}
		}
		if cut == 0 {
			t.Fatal("no pair was long enough to be truncated")
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
