package suite

import (
	"os"
	"path/filepath"
	"testing"

	"convrep/evaluate"
)

// --output is a JSON file, or a folder (made earlier by --write-splits inside it, or named with a trailing
// slash) that then holds the result as TASK.json.
func TestWriteResultToFileOrFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "results", "splits"), 0o755); err != nil { // as --write-splits results/splits makes it
		t.Fatal(err)
	}
	r := &evaluate.Result{Model: "m", Task: "intent"}
	for _, c := range []struct{ output, want string }{
		{filepath.Join(dir, "out.json"), filepath.Join(dir, "out.json")},
		{filepath.Join(dir, "results"), filepath.Join(dir, "results", "intent.json")},
		{filepath.Join(dir, "fresh") + string(filepath.Separator), filepath.Join(dir, "fresh", "intent.json")},
	} {
		if err := writeResult(r, c.output); err != nil {
			t.Fatalf("--output %s: %v", c.output, err)
		}
		for _, f := range []string{c.want, c.want[:len(c.want)-len(".json")] + ".md"} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("--output %s: %v", c.output, err)
			}
		}
	}
}
