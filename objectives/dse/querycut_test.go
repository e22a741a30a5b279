package dse

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/tokenizers"
)

// TestMultiUtteranceQueryKeepsItsEnd: with QueryCutTokensLeft, a DSE3-1 query (DSE §4.4) longer than
// max_length keeps 3 × max_length tokens, the last ones, so the utterance next to the response survives whole; a 1-1 pair of
// the same dialogue keeps the experiment's budget and side. This is the authors' budget
// (pretrain/training.py, prepare_pairwise_input_multiturn_concatenate: num_turn * max_length).
func TestMultiUtteranceQueryKeepsItsEnd(t *testing.T) {
	tok := tinyBERT(t)
	u1 := strings.Repeat("the first turn is long ", 8) // 40 words, far over any budget below
	u2 := "the middle one is short"
	u3 := "pizza near the station please" // next to the response
	u4 := "there is one on main street"
	d := datasets.Dialogue{ID: "d", Corpus: "toy", Turns: []datasets.Turn{{Speaker: datasets.User, Text: u1}, {Speaker: datasets.System, Text: u2}, {Speaker: datasets.User, Text: u3}, {Speaker: datasets.System, Text: u4}}}
	const maxLength = 12
	for _, variant := range []string{VariantDSE31, VariantDSE123} {
		pairs, err := DSEPairs([]datasets.Dialogue{d}, PairOptions{Variant: variant, MinWords: 3, QueryCut: QueryCutTokensLeft})
		if err != nil {
			t.Fatal(err)
		}
		tp, err := TokenizePairs(pairs, QueryCutTokensLeft, tok, maxLength, tokenizers.TruncateRight, 1)
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

func TestQueryCutFit(t *testing.T) {
	right := tokenizers.BatchOptions{MaxLength: 32, Truncation: tokenizers.TruncateRight}
	left := func(n int) tokenizers.BatchOptions {
		return tokenizers.BatchOptions{MaxLength: n, Truncation: tokenizers.TruncateLeft}
	}
	words := func(n int) tokenizers.BatchOptions {
		return tokenizers.BatchOptions{MaxLength: n, Truncation: tokenizers.TruncateRight}
	}
	long := strings.Repeat("w ", 100) + "end" // 101 words
	for _, c := range []struct {
		cut                 QueryCut
		k, limit, maxLength int
		want                tokenizers.BatchOptions
		wantWords           int // words of the text handed to the tokenizer
	}{
		{QueryCutTokensLeft, 1, 512, 32, right, 101},
		{QueryCutTokensLeft, 0, 512, 32, right, 101},
		{QueryCutTokensLeft, 3, 512, 0, tokenizers.BatchOptions{}, 101},
		{QueryCutTokensLeft, 3, 0, 32, left(96), 101},
		{QueryCutTokensLeft, 3, 512, 32, left(96), 101},
		{QueryCutTokensLeft, 3, 64, 32, left(64), 101},
		{QueryCutTokensLeft, 2, 16, 32, left(32), 101}, // never below max_length
		// The authors' cut: int(0.9 × k × max_length) words, uncapped, then the tokenizer's right cut.
		{QueryCutWords, 1, 512, 32, right, 101},
		{QueryCutWords, 3, 512, 0, tokenizers.BatchOptions{}, 101},
		{QueryCutWords, 2, 512, 32, words(64), 57}, // int(57.6)
		{QueryCutWords, 3, 512, 32, words(96), 86}, // int(86.4)
		{QueryCutWords, 3, 64, 32, words(64), 86},
		{QueryCutWords, 2, 512, 16, words(32), 28}, // int(28.8)
		{QueryCutWords, 2, 512, 64, words(128), 101},
	} {
		in := right
		in.MaxLength = c.maxLength
		if c.maxLength == 0 {
			in = tokenizers.BatchOptions{}
		}
		text, got := c.cut.Fit(datasets.Pair{Query: long, QueryUtterances: c.k}, in, c.limit)
		if got != c.want {
			t.Errorf("%s k=%d limit=%d max_length=%d: %+v, want %+v", c.cut, c.k, c.limit, c.maxLength, got, c.want)
		}
		if w := strings.Fields(text); len(w) != c.wantWords || w[len(w)-1] != "end" {
			t.Errorf("%s k=%d max_length=%d: the text has %d words ending %q, want %d ending \"end\"", c.cut, c.k, c.maxLength, len(w), w[len(w)-1], c.wantWords)
		}
	}
}

// TestAuthorsQueryCut: a 2-1 query cut as the DSE authors cut it keeps its last int(0.9 × 2 × max_length)
// words (split as Python splits) and then loses its end when those words make more tokens than the budget.
func TestAuthorsQueryCut(t *testing.T) {
	tok := tinyBERT(t)
	const maxLength = 8 // budget 16 tokens, 14 words
	for _, c := range []struct {
		name, query, kept string
		endCut            bool // the kept words make more than the budget: the tokenizer cuts their end
	}{
		{"short: whole", "hello there [SEP] how are you", "hello there [SEP] how are you", false},
		{"words cut from the front", "a b c d e f g h i j k l m n o p", "c d e f g h i j k l m n o p", false},
		{"python white space", "a b\x1cc d e f g h i j k l m n o", "b c d e f g h i j k l m n o", false}, // str.split cuts at U+001C
		{"tokens cut from the end", "one 01223323737 two three four five six seven eight nine ten",
			"one 01223323737 two three four five six seven eight nine ten", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pairs := []datasets.Pair{{Query: c.query, Response: "fine", QueryUtterances: 2}}
			tp, err := TokenizePairs(pairs, "", tok, maxLength, tokenizers.TruncateRight, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tok.EncodeBatch([]string{c.kept}, tokenizers.BatchOptions{MaxLength: 2 * maxLength, Truncation: tokenizers.TruncateRight})
			if err != nil {
				t.Fatal(err)
			}
			if got, w := to64(tp.Query[0]), want.InputIDs[0][:want.Lengths[0]]; !slices.Equal(got, w) {
				t.Errorf("query %v, want %v", got, w)
			}
			full, err := tok.Encode(c.kept)
			if err != nil {
				t.Fatal(err)
			}
			if cut := len(full) > 2*maxLength; cut != c.endCut || len(tp.Query[0]) != min(len(full), 2*maxLength) {
				t.Errorf("%d tokens of %d kept (end cut: %v, want %v)", len(tp.Query[0]), len(full), cut, c.endCut)
			}
		})
	}
}

// tinyBERT is the tokenizer of the tiny BERT fixture.
func tinyBERT(t testing.TB) *tokenizers.Tokenizer {
	t.Helper()
	tok, err := tokenizers.Load(shared.MustPath(t, "fixtures", "tiny-bert"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func to64(ids []int32) []int64 {
	out := make([]int64, len(ids))
	for i, v := range ids {
		out[i] = int64(v)
	}
	return out
}

// manyPairs is the toy pairs of every variant, repeated with numbers so
// that several workers' chunks are exercised.
func manyPairs(t testing.TB, copies int) []datasets.Pair {
	t.Helper()
	var base []datasets.Pair
	for _, v := range []string{VariantDSE123, VariantDropout} {
		ps, err := DSEPairs(toyDialogues(), PairOptions{Variant: v})
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, ps...)
	}
	base = append(base,
		datasets.Pair{Query: "", Response: "[CLS] odd [SEP] specials [MASK]"},
		datasets.Pair{Query: "Café Ünïcode 東京 🍕", Response: "a\u00a0b\tc\nd"},
	)
	out := make([]datasets.Pair, 0, copies*len(base))
	for c := range copies {
		for _, p := range base {
			p.Query = fmt.Sprintf("%s %d", p.Query, c)
			out = append(out, p)
		}
	}
	return out
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
		tp, err := TokenizePairs(pairs, c.cut, tok, maxLen, trunc, 2)
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
