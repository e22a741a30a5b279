package tokenizers

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestSaveReproducesHFFiles saves tokenizers loaded from save_pretrained
// output and expects the very same bytes back.
func TestSaveReproducesHFFiles(t *testing.T) {
	for _, tc := range []struct {
		dir   []string
		files []string
	}{
		{[]string{"tokenizer", "bert-base-uncased-usr-sys"}, []string{vocabTxtFile, configFile, specialMapFile, addedTokensFile}},
		{[]string{"tiny-bert"}, []string{vocabTxtFile, configFile, specialMapFile}},
		{[]string{"tiny-distilbert"}, []string{vocabTxtFile, configFile, specialMapFile}},
		{[]string{"tiny-roberta"}, []string{vocabJSONFile, mergesFile, configFile, specialMapFile}},
	} {
		src := fixture(t, tc.dir...)
		t.Run(filepath.Base(src), func(t *testing.T) {
			out := t.TempDir()
			if err := mustLoad(t, src).Save(out); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				want, err := os.ReadFile(filepath.Join(src, f))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from HF's (%d vs %d bytes)\n got %.300s\nwant %.300s", f, len(got), len(want), got, want)
				}
			}
			if _, err := os.Stat(filepath.Join(out, addedTokensFile)); (err == nil) != slices.Contains(tc.files, addedTokensFile) {
				t.Errorf("%s present = %v, want %v", addedTokensFile, err == nil, slices.Contains(tc.files, addedTokensFile))
			}
		})
	}
}

// TestSaveLoadRoundTrip adds tokens, saves, reloads, and expects the same
// encodings of every fixture text and the same vocabulary size.
func TestSaveLoadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t testing.TB) *Tokenizer
		cases string
	}{
		{"bert+special", func(t testing.TB) *Tokenizer {
			tok := mustLoad(t, fixture(t, "tiny-bert"))
			tok.AddSpecialTokens("[USR]", "[SYS]")
			return tok
		}, "bert_uncased_cases.jsonl"},
		{"bert+added", caseFiles[2].setup, "bert_uncased_todbert_add_tokens_cases.jsonl"},
		{"roberta+special", func(t testing.TB) *Tokenizer {
			tok := mustLoad(t, fixture(t, "tiny-roberta"))
			if n := tok.AddSpecialTokens("[USR]", "[SYS]"); n != 2 {
				t.Fatalf("added %d, want 2", n)
			}
			return tok
		}, "roberta_cases.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.setup(t)
			dir := t.TempDir()
			if err := orig.Save(dir); err != nil {
				t.Fatal(err)
			}
			back := mustLoad(t, dir)
			if back.VocabSize() != orig.VocabSize() || back.Kind() != orig.Kind() || back.PadID() != orig.PadID() {
				t.Fatalf("reloaded size/kind/pad %d/%v/%d, want %d/%v/%d", back.VocabSize(), back.Kind(), back.PadID(),
					orig.VocabSize(), orig.Kind(), orig.PadID())
			}
			texts := []string{"[USR] hello [SYS] hi there", "[usr] x [SYS]", "hello <mask> world"}
			for _, c := range readCases(t, tc.cases) {
				texts = append(texts, c.Text)
			}
			for _, s := range texts {
				a, errA := orig.Tokenize(s)
				b, errB := back.Tokenize(s)
				if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
					t.Errorf("%q: %q (%v) after reload, want %q (%v)", s, b, errB, a, errA)
				}
				ia, _ := orig.Encode(s)
				ib, _ := back.Encode(s)
				if !reflect.DeepEqual(ia, ib) {
					t.Errorf("%q: ids %v after reload, want %v", s, ib, ia)
				}
			}
			// Saving the reloaded tokenizer writes the same files again.
			dir2 := t.TempDir()
			if err := back.Save(dir2); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				x, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				y, err := os.ReadFile(filepath.Join(dir2, e.Name()))
				if err != nil || !bytes.Equal(x, y) {
					t.Errorf("%s changed on the second save (err %v)", e.Name(), err)
				}
			}
		})
	}
}
