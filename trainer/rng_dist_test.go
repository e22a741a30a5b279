package trainer_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/internal/torch"
	"convrep/rundir"
	"convrep/trainer/trainertest"
)

// dropoutSettings keep the tiny experiment's dropout (0.1) on, so that every step draws from each rank's
// generators: a resume that gave a rank the wrong stream would drift.
var dropoutSettings = []string{"train.max_steps=16", "train.checkpoint_every=2"}

// Two Gloo workers with dropout on, both SIGKILLed mid-run and resumed, end in the same bytes as an
// uninterrupted two-worker run: each rank continues its own dropout stream from the checkpoint.
func TestTwoGlooWorkersKilledAndResumedWithDropout(t *testing.T) {
	ref := trainertest.Experiment(t, t.TempDir(), "")
	runWorkers(t, 2, ref, dropoutSettings, false)

	killed := trainertest.Experiment(t, t.TempDir(), "")
	out := outOf(killed)
	w := startWorkers(t, 2, killed, dropoutSettings, false)
	deadline := time.Now().Add(2 * time.Minute)
	for trainertest.Newest(t, out) < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint 6 after two minutes:\n%s", workerLogs(w))
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, cmd := range w.cmds {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for r, cmd := range w.cmds {
		if err := cmd.Wait(); err == nil {
			t.Fatalf("worker %d ended on its own before the kill:\n%s", r, workerLogs(w))
		}
	}
	if _, err := os.Stat(filepath.Join(out, "model")); err == nil {
		t.Fatal("the run had finished when it was killed: the kill came too late")
	}
	t.Logf("killed after checkpoint %d", trainertest.Newest(t, out))
	runWorkers(t, 2, killed, dropoutSettings, true)

	final := filepath.Base(rundir.At("").CheckpointPath(16))
	trainertest.SameFiles(t, filepath.Join(rundir.At(outOf(ref)).CheckpointDir(), final), filepath.Join(rundir.At(out).CheckpointDir(), final))
	trainertest.SameFiles(t, filepath.Join(outOf(ref), "model", "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
	a, b := readMetricLines(t, outOf(ref)), readMetricLines(t, out)
	checkSteps(t, "the uninterrupted run", a, 16)
	checkSteps(t, "the resumed run", b, 16)
	for i := range min(len(a), len(b)) {
		if !sameTrajectory(a[i], b[i]) {
			t.Errorf("step %d differs:\n%+v\n%+v", a[i].Step, a[i], b[i])
		}
	}
	c, err := checkpoint.Read(rundir.At(out).CheckpointPath(16))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RNG) != 2 || bytes.Equal(c.RNG[0].CPU, c.RNG[1].CPU) || c.RNG[0].CUDA != nil {
		t.Errorf("the final checkpoint holds %d ranks' states (CPU states equal: %v), want two different CPU states and no CUDA ones",
			len(c.RNG), len(c.RNG) == 2 && bytes.Equal(c.RNG[0].CPU, c.RNG[1].CPU))
	}
}

// The two ranks draw different dropout masks at the same step: on a fresh run, after a resume from their
// own checkpoint (each restores its stream), and after a resume from a one-process checkpoint (rank 1
// has no stream there and seeds its own).
func TestRanksDrawDifferentDropoutMasks(t *testing.T) {
	sets := []string{"train.max_steps=4", "train.checkpoint_every=2"}
	fresh := trainertest.Experiment(t, t.TempDir(), "")
	masks := drawMasks(t, fresh, sets, false)
	differ(t, "fresh run", masks)

	resumed := trainertest.Experiment(t, t.TempDir(), "")
	runWorkers(t, 2, resumed, sets, false)
	differ(t, "resumed two-rank run", drawMasks(t, resumed, sets, true))

	single := trainertest.Experiment(t, t.TempDir(), "")
	if err := trainertest.Run(t, single, sets, false); err != nil {
		t.Fatal(err)
	}
	differ(t, "two ranks resumed from one process", drawMasks(t, single, sets, true))
}

// drawMasks starts two workers that build the trainer (joining, restoring and seeding as a run does) and
// each draw one dropout mask, and returns the masks by rank.
func drawMasks(t *testing.T, exp string, sets []string, resume bool) [][]byte {
	t.Helper()
	dir := t.TempDir()
	runWorkers(t, 2, exp, sets, resume, "CONVREP_TEST_WORKER_MASKS="+dir)
	var masks [][]byte
	for r := 0; r < 2; r++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.mask", r)))
		if err != nil {
			t.Fatal(err)
		}
		masks = append(masks, b)
	}
	return masks
}

func differ(t *testing.T, what string, masks [][]byte) {
	t.Helper()
	if bytes.Equal(masks[0], masks[1]) {
		t.Errorf("%s: ranks 0 and 1 drew the same dropout mask", what)
	}
}

// drawMask is a worker of drawMasks: it builds the trainer as a run does and writes the mask of a dropout
// (p = 0.5 over 4096 ones) drawn right after, as rank-<r>.mask under dir.
func drawMask(t *testing.T, path string, sets []string, resume bool, dir string) {
	tr, err := trainertest.New(t, path, sets, resume)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseCluster()
	ones := ts.MustOnes([]int64{4096}, gotch.Float, gotch.CPU)
	kept := ts.MustDropout(ones, 0.5, true)
	mask := make([]byte, 4096)
	for i, v := range kept.Float64Values() {
		if v != 0 {
			mask[i] = 1
		}
	}
	torch.Drop(ones, kept)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.mask", tr.Rank())), mask, 0o644); err != nil {
		t.Fatal(err)
	}
}

func workerLogs(w *workers) string {
	var s string
	for r, l := range w.logs {
		b, _ := os.ReadFile(l)
		s += fmt.Sprintf("worker %d:\n%s\n", r, b)
	}
	return s
}
