package traincmd

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"convrep/internal/shared"
)

// SIGTERM while a run builds its data (four corpora's pairs, tokenised into a new cache) ends it within 2 s,
// with a non-zero exit, leaving no temporary or partial file in the cache folder and no checkpoint.
func TestSignalWhileBuildingTheDataStopsAtOnce(t *testing.T) {
	tok := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	root := shared.MustPath(t, "data", "pretrain")
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "out"), filepath.Join(dir, "cache")
	exp := filepath.Join(dir, "build.toml")
	body := fmt.Sprintf(`name = "build"
output_dir = %q

[model]
tokenizer = %q
max_length = 32
device = "cpu"

[model.random]
arch = "bert"
layers = 1
hidden = 16
heads = 2
intermediate = 32
max_positions = 64

[data]
root = %q
corpora = ["woz2", "camrest676", "frames", "kvret", "msr_e2e", "taskmaster"]
cache_dir = %q

[objective]
name = "dse"

[train]
batch_size = 8
max_steps = 10
lr = 1e-3
`, out, tok, root, cache)
	if err := os.WriteFile(exp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CONVREP_FAKE_WORKER=train", "CONVREP_TRAIN_ARGS=--quiet "+exp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var lines []string
	built := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "built a randomly initialised backbone") {
				close(built) // the pairs are built next
			}
		}
	}()
	select {
	case <-built:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run built no model in 2 minutes")
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("stopped %s after SIGTERM, want within 2 s", took)
	}
	if err == nil {
		t.Errorf("exit 0 after an interrupted set-up:\n%s", strings.Join(lines, "\n"))
	}
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("a temporary file is left: %s", p)
		}
		return nil
	})
	if m, _ := filepath.Glob(filepath.Join(out, "checkpoints", "*")); len(m) > 0 {
		t.Errorf("checkpoints written: %v", m)
	}
}
