package trainer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"convrep/rundir"
	"convrep/tensorboard"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// readEvents reads a run's event file back: its events of scalars, by step, each step once.
func readEvents(t *testing.T, out string) (steps []int64, byStep map[int64][]tensorboard.Scalar) {
	t.Helper()
	path, err := trainer.EventFile(out)
	if err != nil || path == "" {
		t.Fatalf("no event file in %s (%v)", out, err)
	}
	events, err := tensorboard.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[0].FileVersion != tensorboard.FileVersion {
		t.Fatalf("%s does not start with its file version: %+v", path, events)
	}
	byStep = map[int64][]tensorboard.Scalar{}
	for _, e := range events[1:] {
		steps = append(steps, e.Step)
		byStep[e.Step] = e.Scalars
	}
	return steps, byStep
}

// The event file holds, for each metrics line, an event at its step with the line's scalars, float32 of
// each value (TensorBoard's simple_value): the loss at every step is metrics.jsonl's.
func TestEventFileHoldsEveryMetricsLine(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	out := filepath.Join(dir, "out")
	if err := trainertest.Run(t, exp, []string{"train.max_steps=4", "train.checkpoint_every=2"}, false); err != nil {
		t.Fatal(err)
	}
	ms := readMetricLines(t, out)
	checkSteps(t, "the run", ms, 4)
	steps, byStep := readEvents(t, out)
	if !slices.Equal(steps, metricStepsOf(ms)) {
		t.Fatalf("event steps %v, metrics steps %v", steps, metricStepsOf(ms))
	}
	for _, m := range ms {
		got := byStep[m.Step]
		if !reflect.DeepEqual(got, trainer.MetricScalars(m)) {
			t.Errorf("step %d: events %+v, want %+v", m.Step, got, trainer.MetricScalars(m))
		}
		if len(got) == 0 || got[0].Tag != "train/loss" || got[0].Value != float32(m.Loss) {
			t.Errorf("step %d: loss event %+v, metrics.jsonl's loss %v", m.Step, got, m.Loss)
		}
	}
	tags := map[string]bool{}
	for _, s := range byStep[4] {
		tags[s.Tag] = true
	}
	want := []string{"train/loss", "train/lr", "train/head_lr", "train/grad_norm", "train/pairs_per_s", "train/step_s", "train/data_wait_s"}
	for name := range ms[3].Objective {
		want = append(want, "objective/"+name)
	}
	for _, tag := range want {
		if !tags[tag] {
			t.Errorf("no %s among the tags %v", tag, tags)
		}
	}
	if n, err := trainer.VerifyEventFile(out); n != 4 || err != nil {
		t.Errorf("VerifyEventFile: %d steps, %v", n, err)
	}
}

// A run resumed from a checkpoint behind the steps its event file reached (killed after it) keeps the events
// up to the checkpoint and writes the rest again: each step once, with an uninterrupted run's trajectory. An
// event file lost (or switched off) before the resume is rebuilt from metrics.jsonl; with train.tensorboard
// false none is written.
func TestResumedEventFileHasEachStepOnce(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	full := filepath.Join(dir, "out")
	set := []string{"data.max_examples=64", "train.max_steps=4", "train.checkpoint_every=2", "train.keep_checkpoints=10"}
	if err := trainertest.Run(t, exp, set, false); err != nil {
		t.Fatal(err)
	}
	refSteps, ref := readEvents(t, full)
	if fmt.Sprint(refSteps) != "[1 2 3 4]" {
		t.Fatalf("uninterrupted run's event steps %v", refSteps)
	}
	for _, c := range []struct {
		name     string
		prepare  func(out string) // what happened to the folder before the resume
		sets     []string
		noEvents bool
	}{
		{name: "killed after step 4", prepare: func(string) {}},
		{name: "event file lost", prepare: func(out string) {
			p, _ := trainer.EventFile(out)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "tensorboard off", sets: []string{"train.tensorboard=false"}, noEvents: true, prepare: func(out string) {
			p, _ := trainer.EventFile(out)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := trainertest.CopyRun(t, full)
			for _, s := range trainertest.CheckpointSteps(t, out) {
				if s > 2 {
					if err := os.Remove(rundir.At(out).CheckpointPath(s)); err != nil {
						t.Fatal(err)
					}
				}
			}
			c.prepare(out)
			sets := append(slices.Clone(set), fmt.Sprintf("output_dir=%q", out))
			if err := trainertest.Run(t, exp, append(sets, c.sets...), true); err != nil {
				t.Fatal(err)
			}
			checkSteps(t, "the resumed run", readMetricLines(t, out), 4)
			if c.noEvents {
				if p, err := trainer.EventFile(out); p != "" || err != nil {
					t.Errorf("train.tensorboard false wrote %s (%v)", p, err)
				}
				return
			}
			if n, err := trainer.VerifyEventFile(out); n != 4 || err != nil {
				t.Errorf("VerifyEventFile: %d steps, %v", n, err)
			}
			steps, got := readEvents(t, out)
			if !slices.Equal(steps, refSteps) {
				t.Fatalf("resumed run's event steps %v, want %v each once", steps, refSteps)
			}
			for _, s := range steps {
				if a, b := trajectoryScalars(got[s]), trajectoryScalars(ref[s]); !reflect.DeepEqual(a, b) {
					t.Errorf("step %d: %v, the uninterrupted run's %v", s, a, b)
				}
			}
		})
	}
}

// trajectoryScalars leaves out the timings, which differ between runs.
func trajectoryScalars(s []tensorboard.Scalar) map[string]float32 {
	m := map[string]float32{}
	for _, x := range s {
		switch x.Tag {
		case "train/pairs_per_s", "train/step_s", "train/data_wait_s", "train/elapsed_s":
		default:
			m[x.Tag] = x.Value
		}
	}
	return m
}

// VerifyEventFile reports a step written twice, a step missing, a loss that differs and a step metrics.jsonl
// lacks.
func TestVerifyEventFileFindsMismatches(t *testing.T) {
	ms := []trainer.Metric{{Step: 1, Loss: 2.5, LR: 1e-3}, {Step: 2, Loss: 2.25, LR: 1e-3, Objective: map[string]float64{"acc": 0.5}}}
	for _, c := range []struct {
		name  string
		steps []int64
		loss  float32 // step 2's, when not 0
		want  string
	}{
		{"good", []int64{1, 2}, 0, ""},
		{"twice", []int64{1, 2, 2}, 0, "step 2 twice"},
		{"missing", []int64{1}, 0, "no event at step 2"},
		{"other loss", []int64{1, 2}, 2.3, "step 2: scalars"},
		{"extra", []int64{1, 2, 3}, 0, "step 3 is not in metrics.jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			var lines []byte
			for _, m := range ms {
				b, _ := json.Marshal(m)
				lines = append(append(lines, b...), '\n')
			}
			if err := os.WriteFile(filepath.Join(out, "metrics.jsonl"), lines, 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := tensorboard.Create(filepath.Join(out, tensorboard.FileName(time.Now())), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.steps {
				m := trainer.Metric{Step: s}
				if int(s) <= len(ms) {
					m = ms[s-1]
				}
				sc := trainer.MetricScalars(m)
				if s == 2 && c.loss != 0 {
					sc[0].Value = c.loss
				}
				if err := w.Add(s, time.Now(), sc); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			_, err = trainer.VerifyEventFile(out)
			if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Errorf("VerifyEventFile: %v, want %q", err, c.want)
			}
		})
	}
}
