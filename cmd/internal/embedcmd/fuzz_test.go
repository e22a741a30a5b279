package embedcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadTexts feeds embed's input reader arbitrary .txt and .jsonl files: no panic, and an error names the
// file.
//
//	go test -run XXX -fuzz FuzzReadTexts -fuzztime 60s ./cmd/embed
func FuzzReadTexts(f *testing.F) {
	f.Add(false, []byte("book a table\nplay music\n"))
	f.Add(true, []byte("{\"text\": \"hi\", \"id\": 1}\n{\"text\": \"bye\"}\n"))
	f.Add(true, []byte("{\"text\": 3}\n"))
	f.Fuzz(func(t *testing.T, jsonl bool, data []byte) {
		name := "texts.txt"
		if jsonl {
			name = "texts.jsonl"
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readTexts(p); err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name the file", err)
		}
	})
}
