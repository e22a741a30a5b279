package dse

import (
	"path/filepath"
	"testing"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/objectives"
	"convrep/tokenizers"
)

// camRestEnv is the data environment of a DSE run on the shared CamRest676 corpus with the tiny BERT
// fixture's tokenizer (model_max_length 64).
func camRestEnv(t *testing.T, maxLength int) objectives.DataEnv {
	t.Helper()
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	tok, err := tokenizers.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	root := shared.MustPath(t, "data", "pretrain")
	files, err := datasets.Files("camrest676", filepath.Join(root, "camrest676"))
	if err != nil {
		t.Fatal(err)
	}
	return objectives.DataEnv{Root: root, Corpora: []string{"camrest676"}, Files: files, MinWords: PaperMinWords,
		CacheDir: t.TempDir(), Tok: tok, TokDir: dir, MaxLength: maxLength, Truncation: tokenizers.TruncateRight}
}

// TestNewPairsMultiUtteranceBudget: DSE3-1's queries get 3 × max_length tokens (DSE §4.4 as the authors ran
// it), responses max_length; the model's positions cap the queries' budget.
func TestNewPairsMultiUtteranceBudget(t *testing.T) {
	for _, cut := range []QueryCut{QueryCutWords, QueryCutTokensLeft} {
		t.Run(string(cut), func(t *testing.T) { checkMultiUtteranceBudget(t, cut) })
	}
}

func checkMultiUtteranceBudget(t *testing.T, cut QueryCut) {
	const maxLength = 16
	env := camRestEnv(t, maxLength)
	d, err := NewPairs(env, VariantDSE31, cut)
	if err != nil {
		t.Fatal(err)
	}
	ps := d.(*pairSet).pairs
	if ps.Len() == 0 {
		t.Fatal("no dse3-1 pairs from CamRest676")
	}
	longest := 0
	for i := range ps.Len() {
		if n := len(ps.Query[i]); n > 3*maxLength {
			t.Fatalf("pair %d: query of %d tokens, over 3 × %d", i, n, maxLength)
		}
		if n := len(ps.Response[i]); n > maxLength {
			t.Fatalf("pair %d: response of %d tokens, over %d", i, n, maxLength)
		}
		longest = max(longest, len(ps.Query[i]))
	}
	if longest <= maxLength {
		t.Errorf("longest query %d tokens: the 3-utterance queries were cut to max_length %d", longest, maxLength)
	}

	// 3 × 32 = 96 is over the fixture's 64 positions: the queries get 64, whatever the cut.
	env = camRestEnv(t, 32)
	if d, err = NewPairs(env, VariantDSE31, cut); err != nil {
		t.Fatal(err)
	}
	ps = d.(*pairSet).pairs
	longest = 0
	for i := range ps.Len() {
		longest = max(longest, len(ps.Query[i]))
	}
	if longest != 64 {
		t.Errorf("max_length 32, 64 positions: longest query %d tokens, want 64", longest)
	}
}
