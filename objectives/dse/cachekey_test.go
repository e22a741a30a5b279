package dse

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/tokenizers"
)

// The pairs' cache keys are those computed before DSE's construction moved here from datasets (its digests
// were taken then, over the same files): a changed key would re-tokenise every user's cache for nothing.
// Two spellings of one setting share a key; an unknown variant or cut has none.
func TestPairCacheKeysKept(t *testing.T) {
	root := t.TempDir()
	corpus := filepath.Join(root, "toy")
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(corpus, "a.json"), `{"dialogues": 1}`)
	write(filepath.Join(corpus, "sub", "b.json"), `{"dialogues": 2}`)
	csv := filepath.Join(root, "chats.csv")
	write(csv, "dialogue_id,turn,speaker,text\nc1,1,user,hello there my friend\nc1,2,agent,hi how can I help\n")
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	base := datasets.CacheKey{Corpora: []string{"toy"}, CorpusFiles: []string{corpus}, TokenizerDir: dir, Tokenizer: tinyBERT(t),
		MaxLength: 32, Truncation: tokenizers.TruncateRight}
	for _, tc := range []struct {
		opt  PairOptions
		edit func(k *datasets.CacheKey)
		want string
	}{
		{PairOptions{Variant: VariantDSE, MinWords: 3}, nil, "f387f57029a66e847d76319402e6e15c248b84e1682a96df29a8883b2ad8ff34"},
		{PairOptions{}, nil, "6bcf7548453850c362ada084a24c5a095ef86f472fd48d278a6a4c16896411d4"},
		{PairOptions{Variant: VariantDSE, Sep: DefaultSep, QueryCut: QueryCutTokensLeft}, nil, "6bcf7548453850c362ada084a24c5a095ef86f472fd48d278a6a4c16896411d4"},
		{PairOptions{Variant: VariantDSE21, Sep: " </s> ", BothDirections: true, QueryCut: QueryCutTokensLeft}, nil, "9966ef76fd583fe00b37d453abdbd97aecf1d24910f7f80478cf1f1a45fa6e79"},
		{PairOptions{Variant: VariantDSE31, MinWords: -5}, nil, "8c46147f5285147164e3d5b565ffe2882232e9791f1bea85de91525c4bfc69e4"},
		{PairOptions{Variant: VariantDSE31, MinWords: -1, QueryCut: QueryCutWords}, nil, "8c46147f5285147164e3d5b565ffe2882232e9791f1bea85de91525c4bfc69e4"},
		{PairOptions{Variant: VariantDropout, QueryCut: QueryCutTokensLeft, MinWords: 3}, nil, "4ba5307bda4fb7ba82105e20eee3bc6f83107ff1b33cc84ac22d2bfe3773bb80"},
		{PairOptions{Variant: VariantDSE123, MinWords: 3}, func(k *datasets.CacheKey) {
			k.Streamed, k.Holdout, k.Extra, k.MergeSpeakers, k.MetaLWOZMultiWOZ = true, "valid 0.1 seed 1", []string{"skip_bad=false"}, true, true
			k.Truncation = tokenizers.TruncateLeft
		}, "24f2ed0e0bad39d3bc08854523e5556c41239ff236c96cda6805845954acda82"},
		{PairOptions{Variant: VariantDSE, MinWords: 3}, func(k *datasets.CacheKey) {
			k.CorpusFiles, k.Corpora = nil, nil
			k.Files = &datasets.FileSet{Paths: []string{csv}}
		}, "8195932ad74d483b66364d85800825a3f9fa90e656ff527016dea4df93221e86"},
	} {
		name := fmt.Sprintf("%+v", tc.opt)
		pk, err := tc.opt.Key()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		k := base
		k.Pairs = pk
		if tc.edit != nil {
			tc.edit(&k)
		}
		if got, err := k.Digest(); err != nil || got != tc.want {
			t.Errorf("%s: digest %s (%v), want %s", name, got, err, tc.want)
		}
	}
	for _, bad := range []PairOptions{{Variant: "dse9-1"}, {Variant: VariantDSE21, QueryCut: "middle"}} {
		if _, err := bad.Key(); err == nil || !strings.Contains(err.Error(), "pair options") {
			t.Errorf("%+v: error %v", bad, err)
		}
	}
}
