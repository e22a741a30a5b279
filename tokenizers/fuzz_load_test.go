package tokenizers

import (
	"os"
	"path/filepath"
	"testing"

	"convrep/internal/shared"
)

// tokenizerFiles are the files Load reads, by the fuzzer's kind: each replaces one file of a working folder.
var tokenizerFiles = []string{"vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
	"tokenizer.json", "vocab.json", "merges.txt"}

// FuzzLoad feeds Load tokenizer folders in which one file (vocab, merges, tokenizer_config, special_tokens_map,
// added_tokens or tokenizer.json) holds arbitrary bytes: no panic, and a tokenizer it accepts encodes.
//
//	go test -run XXX -fuzz FuzzLoad -fuzztime 60s ./tokenizers
func FuzzLoad(f *testing.F) {
	bert := shared.MustPath(f, "fixtures", "tokenizer", "bert-base-uncased-usr-sys")
	roberta := shared.MustPath(f, "data", "vocab", "roberta-base")
	for kind, name := range tokenizerFiles {
		for _, dir := range []string{bert, roberta} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				f.Add(uint8(kind), len(b) > 0 && dir == roberta, b[:min(len(b), 4096)])
			}
		}
	}
	f.Add(uint8(4), false, []byte(`{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}}, "added_tokens": [{"id": 9, "content": "[X]", "special": true}]}`))
	f.Fuzz(func(t *testing.T, kind uint8, bpe bool, data []byte) {
		src := bert
		if bpe {
			src = roberta
		}
		dir := t.TempDir()
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, tokenizerFiles[int(kind)%len(tokenizerFiles)]), data, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := Load(dir)
		if err != nil {
			return
		}
		if _, err := tok.Encode("book a table for two at 7pm [USR] héllo"); err != nil {
			return
		}
	})
}
