package dse

import (
	"path/filepath"
	"strings"
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
	return objectives.DataEnv{Root: root, Corpora: []string{"camrest676"}, Files: files, MinWords: datasets.PaperMinWords,
		CacheDir: t.TempDir(), Tok: tok, TokDir: dir, MaxLength: maxLength, Truncation: tokenizers.TruncateRight}
}

// TestNewPairsMultiUtteranceBudget: DSE3-1's queries get 3 × max_length tokens (DSE §4.4 as the authors ran
// it), responses max_length; a budget over the model's positions is refused before anything is read.
func TestNewPairsMultiUtteranceBudget(t *testing.T) {
	const maxLength = 16
	env := camRestEnv(t, maxLength)
	d, err := NewPairs(env, datasets.VariantDSE31)
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

	env = camRestEnv(t, 32) // 3 × 32 = 96 > 64
	if _, err := NewPairs(env, datasets.VariantDSE31); err == nil || !strings.Contains(err.Error(), "model_max_length 64") {
		t.Errorf("dse3-1 at max_length 32 with 64 positions: got %v, want a model_max_length error", err)
	}
	if _, err := NewPairs(env, datasets.VariantDSE); err != nil {
		t.Errorf("dse at max_length 32: %v", err)
	}
}
