package trainer_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"convrep/rundir"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// TestKillAndResumeIsBitIdentical trains the tiny experiment three ways with cmd/train and wants the same
// bytes from each: A uninterrupted; B SIGKILLed twice at random moments and resumed; C SIGTERMed mid-way
// (it must exit 0 with a checkpoint at its current step) and resumed. Dropout is on, so a resume that lost
// libtorch's generator state, the optimiser's moments or the data position would drift.
func TestKillAndResumeIsBitIdentical(t *testing.T) {
	bin := trainertest.BuildTrain(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CONVREP_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CONVREP_KILL_SEED: %v", err)
		}
	}
	t.Logf("kill moments drawn with seed %d (CONVREP_KILL_SEED=%d repeats them)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	root := t.TempDir()
	dirA, dirB, dirC := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	shared := filepath.Join(root, "cache-bc") // B builds the pairs, C reads them back; A builds its own
	for _, d := range []string{dirA, dirB, dirC} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	expA := trainertest.Experiment(t, dirA, "")
	expB := trainertest.Experiment(t, dirB, shared)
	expC := trainertest.Experiment(t, dirC, shared)
	outA, outB, outC := filepath.Join(dirA, "out"), filepath.Join(dirB, "out"), filepath.Join(dirC, "out")
	const steps, every = 30, 3

	// A runs beside B: the machine has two cores and each run one libtorch thread.
	runA := trainertest.Start(t, bin, dirA, expA)

	// B: killed after a random number of checkpoints plus a random part of a checkpoint interval.
	b := trainertest.Start(t, bin, dirB, expB)
	trainertest.KillAt(t, b, outB, rng, int64(every*(1+rng.IntN(4))), syscall.SIGKILL)
	first := trainertest.Newest(t, outB)
	b = trainertest.Start(t, bin, dirB, "--resume", expB)
	trainertest.KillAt(t, b, outB, rng, first+int64(every*(1+rng.IntN(2))), syscall.SIGKILL)
	t.Logf("B killed after checkpoints %d and %d", first, trainertest.Newest(t, outB))
	b = trainertest.Start(t, bin, dirB, "--resume", expB)
	b.MustSucceed(t)

	// C: SIGTERM finishes the step, checkpoints there and exits 0.
	c := trainertest.Start(t, bin, dirC, expC)
	trainertest.KillAt(t, c, outC, rng, int64(every*(1+rng.IntN(5))), syscall.SIGTERM)
	stopped := trainertest.Newest(t, outC)
	logged := metricSteps(t, outC)
	if len(logged) == 0 || logged[len(logged)-1] != stopped || stopped >= steps {
		t.Fatalf("C stopped by SIGTERM: newest checkpoint at step %d, metrics up to %v; want a checkpoint at the last step done, before %d",
			stopped, logged[max(0, len(logged)-1):], steps)
	}
	if !strings.Contains(c.Output(t), "stopped by signal") {
		t.Errorf("C's log does not say it stopped by signal:\n%s", c.Output(t))
	}
	t.Logf("C stopped by SIGTERM at step %d", stopped)
	c = trainertest.Start(t, bin, dirC, "--resume", expC)
	c.MustSucceed(t)
	runA.MustSucceed(t)

	final := filepath.Base(rundir.At("").CheckpointPath(steps))
	metricsA := readMetricLines(t, outA)
	checkSteps(t, "A", metricsA, steps)
	eventStepsA, eventsA := readEvents(t, outA)
	for _, run := range []struct{ name, out string }{{"B", outB}, {"C", outC}} {
		trainertest.SameFiles(t, filepath.Join(outA, "model", "model.safetensors"), filepath.Join(run.out, "model", "model.safetensors"))
		trainertest.SameFiles(t, filepath.Join(rundir.At(outA).CheckpointDir(), final), filepath.Join(rundir.At(run.out).CheckpointDir(), final))
		ms := readMetricLines(t, run.out)
		checkSteps(t, run.name, ms, steps)
		for i := range min(len(ms), len(metricsA)) {
			if !sameTrajectory(ms[i], metricsA[i]) {
				t.Errorf("%s's metrics at step %d differ from A's:\n%+v\n%+v", run.name, ms[i].Step, ms[i], metricsA[i])
			}
		}
		// The event file too, though the kills came after steps past the checkpoints: each step once.
		if eventSteps, events := readEvents(t, run.out); !slices.Equal(eventSteps, eventStepsA) {
			t.Errorf("%s's event file steps %v, want A's %v", run.name, eventSteps, eventStepsA)
		} else {
			for _, s := range eventSteps {
				if a, b := trajectoryScalars(events[s]), trajectoryScalars(eventsA[s]); !reflect.DeepEqual(a, b) {
					t.Errorf("%s's events at step %d differ from A's:\n%v\n%v", run.name, s, a, b)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(run.out, "loss.png")); err != nil {
			t.Errorf("%s: no loss curve: %v", run.name, err)
		}
		// A SIGKILL during a checkpoint's write leaves its temporary file; say so, it is not an error.
		if left, _ := filepath.Glob(filepath.Join(rundir.At(run.out).CheckpointDir(), ".*tmp-*")); len(left) > 0 {
			t.Logf("%s: temporary files left in checkpoints/: %v", run.name, left)
		}
	}
}

func readMetricLines(t *testing.T, out string) []trainer.Metric {
	t.Helper()
	return trainertest.MetricLines[trainer.Metric](t, out)
}

func metricSteps(t *testing.T, out string) []int64 {
	var steps []int64
	for _, m := range readMetricLines(t, out) {
		steps = append(steps, m.Step)
	}
	return steps
}

// checkSteps wants one metrics line per step, 1..n in order (log_every is 1).
func checkSteps(t *testing.T, run string, ms []trainer.Metric, n int64) {
	t.Helper()
	var steps []int64
	for _, m := range ms {
		steps = append(steps, m.Step)
	}
	trainertest.CheckSteps(t, run, steps, n)
}

// sameTrajectory compares what a metrics line says about training, leaving out the timings.
func sameTrajectory(a, b trainer.Metric) bool {
	return a.Step == b.Step && a.Epoch == b.Epoch && a.Loss == b.Loss && a.LR == b.LR && a.HeadLR == b.HeadLR &&
		a.GradNorm == b.GradNorm && reflect.DeepEqual(a.Objective, b.Objective) &&
		reflect.DeepEqual(a.ValidLoss, b.ValidLoss) && reflect.DeepEqual(a.ValidPPL, b.ValidPPL) && a.BestStep == b.BestStep
}

// TestResumeFromEveryCheckpoint is the deterministic half of the test above: a run of three epochs of four
// batches keeps all its checkpoints, including those at the epochs' ends, and a run resumed from each one
// alone must end in the same bytes and log the same trajectory from there on.
func TestResumeFromEveryCheckpoint(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	full := filepath.Join(dir, "out")
	set := []string{"data.max_examples=64", "train.max_steps=10", "train.epochs=3", "train.checkpoint_every=2", "train.keep_checkpoints=10"}
	if err := trainertest.Run(t, exp, set, false); err != nil {
		t.Fatal(err)
	}
	if got := trainertest.CheckpointSteps(t, full); fmt.Sprint(got) != "[2 4 6 8 10]" {
		t.Fatalf("checkpoints at %v, want [2 4 6 8 10]", got)
	}
	ref := readMetricLines(t, full)
	checkSteps(t, "the full run", ref, 10)
	if ref[len(ref)-1].Epoch != 2 {
		t.Fatalf("the full run ends in epoch %d, want 2 (three epochs of four batches)", ref[len(ref)-1].Epoch)
	}
	for _, from := range []int64{2, 4, 6, 8} {
		t.Run(fmt.Sprintf("from step %d", from), func(t *testing.T) {
			out := trainertest.ResumeFolder(t, full, from)
			if err := trainertest.Run(t, exp, append(set, fmt.Sprintf("output_dir=%q", out)), true); err != nil {
				t.Fatal(err)
			}
			trainertest.SameFiles(t, filepath.Join(full, "model", "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
			trainertest.SameFiles(t, rundir.At(full).CheckpointPath(10), rundir.At(out).CheckpointPath(10))
			ms := readMetricLines(t, out)
			if len(ms) != int(10-from) {
				t.Fatalf("resumed run logged %d steps, want %d", len(ms), 10-from)
			}
			for i, m := range ms {
				if !sameTrajectory(m, ref[int(from)+i]) {
					t.Errorf("step %d differs from the full run:\n%+v\n%+v", m.Step, m, ref[int(from)+i])
				}
			}
		})
	}
}
