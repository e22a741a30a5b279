package datasets

import (
	"slices"
	"strings"
	"testing"

	"convrep/tokenizers"
)

// TestMultiUtteranceQueryKeepsItsEnd: a DSE3-1 query (DSE §4.4) longer than max_length keeps 3 ×
// max_length tokens, the last ones, so the utterance next to the response survives whole; a 1-1 pair of
// the same dialogue keeps the experiment's budget and side. This is the authors' budget
// (pretrain/training.py, prepare_pairwise_input_multiturn_concatenate: num_turn * max_length).
func TestMultiUtteranceQueryKeepsItsEnd(t *testing.T) {
	tok := tinyBERT(t)
	u1 := strings.Repeat("the first turn is long ", 8) // 40 words, far over any budget below
	u2 := "the middle one is short"
	u3 := "pizza near the station please" // next to the response
	u4 := "there is one on main street"
	d := Dialogue{ID: "d", Corpus: "toy", Turns: []Turn{{User, u1}, {System, u2}, {User, u3}, {System, u4}}}
	const maxLength = 12
	for _, variant := range []string{VariantDSE31, VariantDSE123} {
		pairs, err := DSEPairs([]Dialogue{d}, PairOptions{Variant: variant, MinWords: 3})
		if err != nil {
			t.Fatal(err)
		}
		tp, err := TokenizePairs(pairs, tok, maxLength, tokenizers.TruncateRight, 1)
		if err != nil {
			t.Fatal(err)
		}
		seen3 := false
		for i, p := range pairs {
			q := to64(tp.Query[i])
			full, err := tok.Encode(p.Query)
			if err != nil {
				t.Fatal(err)
			}
			k := p.QueryUtterances
			wantLen := min(len(full), k*maxLength)
			if len(q) != wantLen {
				t.Errorf("%s pair %d (k=%d): query has %d tokens, want %d", variant, i, k, len(q), wantLen)
			}
			if k == 1 {
				if !slices.Equal(q[:len(q)-1], full[:len(q)-1]) { // right-cut: the start stays
					t.Errorf("%s pair %d: 1-1 query %v is not the start of %v", variant, i, q, full)
				}
				continue
			}
			if k == 3 {
				seen3 = true
			}
			// [CLS], then the last tokens of the joined text, its [SEP].
			if q[0] != full[0] || !slices.Equal(q[1:], full[len(full)-len(q)+1:]) {
				t.Errorf("%s pair %d (k=%d): query %v is not [CLS] + the end of %v", variant, i, k, q, full)
			}
			if k == 3 && !containsRun(q, u3Tokens(t, tok, u3)) {
				t.Errorf("%s pair %d: the utterance next to the response, %q, is not whole in the query %v", variant, i, u3, q)
			}
		}
		if !seen3 {
			t.Fatalf("%s: no 3-1 pair built from %d utterances", variant, len(d.Turns))
		}
	}
}

// u3Tokens is the ids of text without the special tokens.
func u3Tokens(t *testing.T, tok *tokenizers.Tokenizer, text string) []int64 {
	t.Helper()
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	return ids[1 : len(ids)-1]
}

func containsRun(s, run []int64) bool {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func TestQueryOptions(t *testing.T) {
	right := tokenizers.BatchOptions{MaxLength: 32, Truncation: tokenizers.TruncateRight}
	for _, c := range []struct {
		k, limit, maxLength int
		want                tokenizers.BatchOptions
	}{
		{1, 512, 32, right},
		{0, 512, 32, right},
		{3, 512, 0, tokenizers.BatchOptions{}},
		{3, 0, 32, tokenizers.BatchOptions{MaxLength: 96, Truncation: tokenizers.TruncateLeft}},
		{3, 512, 32, tokenizers.BatchOptions{MaxLength: 96, Truncation: tokenizers.TruncateLeft}},
		{3, 64, 32, tokenizers.BatchOptions{MaxLength: 64, Truncation: tokenizers.TruncateLeft}},
		{2, 16, 32, tokenizers.BatchOptions{MaxLength: 32, Truncation: tokenizers.TruncateLeft}}, // never below max_length
	} {
		in := right
		in.MaxLength = c.maxLength
		if c.maxLength == 0 {
			in = tokenizers.BatchOptions{}
		}
		if got := queryOptions(in, c.k, c.limit); got != c.want {
			t.Errorf("k=%d limit=%d max_length=%d: %+v, want %+v", c.k, c.limit, c.maxLength, got, c.want)
		}
	}
}
