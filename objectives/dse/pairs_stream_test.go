package dse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/objectives"
	"convrep/tokenizers"
)

// ownFilesEnv is the data environment of examples/dse_own_data_mini_cpu.toml: the example's support chats,
// its column mapping and merging, with the tiny BERT fixture's tokenizer.
func ownFilesEnv(t *testing.T) objectives.DataEnv {
	t.Helper()
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	tok, err := tokenizers.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := &datasets.FileSet{Paths: []string{filepath.Join("..", "..", "examples", "own-dialogues", "support.csv")},
		Columns: datasets.Columns{Dialogue: "conversation_id", Turn: "turn", Speaker: "role", Text: "message", Domain: "topic"}}
	return objectives.DataEnv{Read: datasets.ReadOptions{Files: files, MergeSameSpeaker: true}, Pairs: datasets.VariantDSE,
		MinWords: datasets.PaperMinWords, CacheDir: t.TempDir(), Tok: tok, TokDir: dir, MaxLength: 32,
		Truncation: tokenizers.TruncateRight, Seed: 1}
}

// Own files build their pairs streamed, and the pairs are those built in memory; with the example
// experiment's train.valid_share 0.1 and seed 1, the two sides split the pairs between them and the held-out
// side still makes a batch of 16.
func TestNewPairsOwnFilesStreamed(t *testing.T) {
	env := ownFilesEnv(t)
	ds, err := env.ReadDialogues()
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := datasets.DSEPairs(ds, datasets.PairOptions{Variant: datasets.VariantDSE, MinWords: env.MinWords, Sep: " [SEP] "})
	if err != nil {
		t.Fatal(err)
	}
	want, err := datasets.TokenizePairs(pairs, env.Tok, env.MaxLength, env.Truncation, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		share float64
		valid bool
	}{{"all", 0, false}, {"training side", 0.1, false}, {"held-out side", 0.1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := env
			e.CacheDir = t.TempDir()
			if tc.share > 0 {
				e.Holdout = &objectives.Holdout{Share: tc.share, Seed: env.Seed, Valid: tc.valid}
			}
			d, err := NewPairs(e, e.Pairs, "")
			if err != nil {
				t.Fatal(err)
			}
			got := d.(*pairSet).pairs
			entries, _ := os.ReadDir(e.CacheDir)
			if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "pairs-") {
				t.Fatalf("cache folder holds %v, want one cache file", entries)
			}
			// Which pairs each side has: a pair is its tokens.
			have := map[string]int{}
			for i := range want.Len() {
				have[rowKey(want.Query[i], want.Response[i])]++
			}
			for i := range got.Len() {
				k := rowKey(got.Query[i], got.Response[i])
				if have[k] == 0 {
					t.Fatalf("pair %d was not built in memory", i)
				}
				have[k]--
			}
			switch {
			case tc.share == 0 && got.Len() != want.Len():
				t.Errorf("%d pairs streamed, %d in memory", got.Len(), want.Len())
			case tc.valid && got.Len() < 16:
				t.Errorf("the held-out side has %d pairs, fewer than the example's batch of 16", got.Len())
			case tc.share > 0 && !tc.valid && got.Len() >= want.Len():
				t.Errorf("the training side kept all %d pairs", got.Len())
			}
		})
	}
}

func rowKey(q, r []int32) string {
	var b strings.Builder
	for _, id := range append(append(append([]int32{}, q...), -1), r...) {
		b.WriteRune(rune(id + 2))
	}
	return b.String()
}
