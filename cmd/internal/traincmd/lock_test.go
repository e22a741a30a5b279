package traincmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"convrep/internal/devtest"
	"convrep/rundir"
	"convrep/trainer/trainertest"
)

// Two convrep train of one experiment, the second started while the first runs and with another seed and
// rate (as a user reported both ran to the end, the first's metrics lost): the second stops within seconds
// with an error naming the folder and the first's pid, and writes nothing; the first then stops on SIGTERM as
// it always does, its metrics one unbroken sequence of its own steps, its lock file naming it.
func TestSecondRunOnAFolderStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Tiny{Device: devtest.Name(), Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32,
		Data: "max_examples = 256\n" + cacheIn(dir), Objective: dse,
		Train: "batch_size = 8\nepochs = 100000\nmax_steps = 1000000\nlr = 1e-3\ncheckpoint_every = 1000000\nlog_every = 5\nthreads = 1"}.Write(t, dir)
	out := filepath.Join(dir, "out")
	train := trainCommand
	first := train(exp)
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Process.Kill(); first.Wait() })
	// The first run is under way once its metrics have a line.
	metrics := filepath.Join(out, "metrics.jsonl")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if st, err := os.Stat(metrics); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first run wrote no metrics in 2 minutes:\n%s", firstErr.String())
		}
	}

	second := train("--set seed=99 --set train.lr=1e-2 --set train.max_steps=10 " + exp)
	var secondErr bytes.Buffer
	second.Stderr = &secondErr
	start := time.Now()
	err := second.Run()
	took := time.Since(start)
	if err == nil {
		t.Fatalf("the second run on %s succeeded:\n%s", out, secondErr.String())
	}
	if took > 10*time.Second {
		t.Errorf("the second run took %s to stop, want at once", took)
	}
	for _, w := range []string{out, fmt.Sprintf("pid %d", first.Process.Pid), "another convrep train"} {
		if !strings.Contains(secondErr.String(), w) {
			t.Errorf("the second run's error lacks %q:\n%s", w, secondErr.String())
		}
	}

	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first run after SIGTERM: %v\n%s", err, firstErr.String())
	}
	f, err := os.Open(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []int64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var m struct{ Step int64 }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		steps = append(steps, m.Step)
	}
	for i, s := range steps {
		if s != int64(5*(i+1)) {
			t.Fatalf("metrics steps %v: want 5, 10, 15, ... of the first run alone", steps)
		}
	}
	if len(steps) == 0 {
		t.Fatal("no metrics")
	}
	lock, err := os.ReadFile(filepath.Join(out, rundir.LockName))
	if err != nil || !strings.Contains(string(lock), fmt.Sprintf(`"pid":%d`, first.Process.Pid)) {
		t.Errorf("lock file %q, %v: want the first run's pid %d", lock, err, first.Process.Pid)
	}
}
