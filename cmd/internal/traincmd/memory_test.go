package traincmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"convrep/trainer/trainertest"
)

// An experiment far beyond this machine's memory (a thousand layers of 4,096: about 200 billion parameters,
// terabytes of weights alone) is refused before anything is built: within 5 s, under 500 MB resident, with
// the estimate and what is available in one message, and nothing written in its output folder but the lock.
// With train.skip_memory_check the same check lets it through to the model's construction (not run here).
func TestFarBeyondMemoryIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Tiny{Device: "cpu", Layers: 1000, Hidden: 4096, Heads: 64, Intermediate: 16384,
		Data: cacheIn(dir), Objective: dse, Train: "batch_size = 64\nmax_steps = 10\nlr = 1e-4"}.Write(t, dir)
	out := filepath.Join(dir, "out")
	cmd := trainCommand(exp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err == nil {
		t.Fatalf("the run started:\n%s", stderr.String())
	}
	if took > 5*time.Second {
		t.Errorf("refused after %s, want under 5 s", took)
	}
	if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024; rss > 500e6 {
		t.Errorf("the refused run reached %d MB resident, want under 500", rss/1e6)
	}
	for _, w := range []string{exp, "the run needs about", " GB", "available", "train.skip_memory_check"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("the refusal lacks %q:\n%s", w, stderr.String())
		}
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if e.Name() != ".convrep.lock" {
			t.Errorf("the refused run wrote %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); err == nil {
		t.Error("the refused run wrote a data cache")
	}
}
