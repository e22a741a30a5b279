package traincmd

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"convrep/trainer/trainertest"
)

// SIGTERM while a run builds its data (four corpora's pairs, tokenised into a new cache) ends it within 2 s,
// with a non-zero exit, leaving no temporary or partial file in the cache folder and no checkpoint.
func TestSignalWhileBuildingTheDataStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Tiny{Device: "cpu", Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32,
		Corpora: `["woz2", "camrest676", "frames", "kvret", "msr_e2e", "taskmaster"]`, Data: cacheIn(dir), Objective: dse,
		Train: "batch_size = 8\nmax_steps = 10\nlr = 1e-3"}.Write(t, dir)
	out, cache := filepath.Join(dir, "out"), filepath.Join(dir, "cache")
	cmd := trainCommand(exp)
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
