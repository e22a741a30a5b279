package trainer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convrep/rundir"
	"convrep/trainer/trainertest"
)

// TestRefusesExistingRunWithoutResume: a second run into an output folder that holds checkpoints must ask
// for --resume instead of overwriting them.
func TestRefusesExistingRunWithoutResume(t *testing.T) {
	exp, out := finishedRun(t)
	before, metrics := trainertest.HashFiles(t, rundir.At(out).CheckpointDir()), trainertest.HashFiles(t, out)
	_, err := trainertest.New(t, exp, nil, false)
	if err == nil || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), "--resume") ||
		!strings.Contains(err.Error(), "step-000000003.safetensors") {
		t.Fatalf("New without resume over a run: %v; want an error naming %s, its newest checkpoint and --resume", err, out)
	}
	if !trainertest.SameHashes(before, trainertest.HashFiles(t, rundir.At(out).CheckpointDir())) || !trainertest.SameHashes(metrics, trainertest.HashFiles(t, out)) {
		t.Error("the refused run changed the output folder")
	}
}

// TestResumeRefusesOtherExperiment: a checkpoint resumes only the experiment that wrote it; settings that do
// not change the trajectory (where the output goes, how often it logs, how long it runs) may change.
func TestResumeRefusesOtherExperiment(t *testing.T) {
	exp, out := finishedRun(t)
	newestPath := rundir.At(out).CheckpointPath(3)
	before := trainertest.HashFiles(t, rundir.At(out).CheckpointDir())
	for _, set := range []string{"train.lr=2e-3", "seed=8", "objective.temperature=0.1", "model.random.dropout=0.2",
		"data.max_examples=256", "train.batch_size=8", "objective.mode=orig", "data.pairs=dse2-1", "train.optimizer=adamw"} {
		t.Run(set, func(t *testing.T) {
			_, err := trainertest.New(t, exp, []string{set}, true)
			if err == nil || !strings.Contains(err.Error(), newestPath) || !strings.Contains(err.Error(), "another experiment") {
				t.Fatalf("resume with %s: %v; want an error naming %s as another experiment's", set, err, newestPath)
			}
			if !trainertest.SameHashes(before, trainertest.HashFiles(t, rundir.At(out).CheckpointDir())) {
				t.Error("the refused resume changed the checkpoints")
			}
		})
	}
	// The same experiment, run longer into a copy of the folder, with other logging: it continues.
	moved := trainertest.CopyRun(t, out)
	set := []string{"train.max_steps=5", "train.log_every=2", "train.checkpoint_every=4", "train.keep_checkpoints=3",
		fmt.Sprintf("output_dir=%q", moved), fmt.Sprintf("data.cache_dir=%q", filepath.Join(t.TempDir(), "cache"))}
	if err := trainertest.Run(t, exp, set, true); err != nil {
		t.Fatalf("resume with %v: %v", set, err)
	}
	if got := trainertest.CheckpointSteps(t, moved); fmt.Sprint(got) != "[3 4 5]" {
		t.Errorf("extended run's checkpoints at %v, want [3 4 5] (step 4 by checkpoint_every, three kept)", got)
	}
	if got := metricSteps(t, moved); fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Errorf("extended run's metrics steps %v, want [1 2 3 4 5]", got)
	}
}

// TestMissingInputsFailBeforeTraining: a wrong corpus, data root, tokenizer or backbone path fails in New,
// naming what is missing, before anything is written: no output folder, no pairs cache.
func TestMissingInputsFailBeforeTraining(t *testing.T) {
	empty := t.TempDir()
	none := filepath.Join(empty, "none")
	for _, tc := range []struct {
		name string
		set  []string
		edit func(string) string
		want []string
	}{
		{name: "corpus folder missing", set: []string{fmt.Sprintf("data.root=%q", empty)}, want: []string{"data.corpora", "woz2", empty}},
		{name: "one of two corpora missing", set: []string{`data.corpora=["woz2", "camrest676"]`, fmt.Sprintf("data.root=%q", empty)},
			want: []string{"woz2", empty}},
		{name: "unknown corpus", set: []string{`data.corpora=["woz2", "wizard"]`}, want: []string{"data.corpora", `"wizard"`}},
		{name: "data root missing", set: []string{fmt.Sprintf("data.root=%q", none)}, want: []string{"data.root", none}},
		{name: "tokenizer folder missing", set: []string{fmt.Sprintf("model.tokenizer=%q", none)}, want: []string{"model.tokenizer", none}},
		{name: "tokenizer folder empty", set: []string{fmt.Sprintf("model.tokenizer=%q", empty)}, want: []string{"model.tokenizer", empty}},
		{name: "backbone folder missing", edit: func(s string) string {
			s = regexp.MustCompile(`(?s)\[model\.random\].*?\n\[data\]`).ReplaceAllString(s, "[data]")
			return strings.Replace(s, "[model]\n", fmt.Sprintf("[model]\nbackbone = %q\n", none), 1)
		}, want: []string{"model.backbone", none}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exp := trainertest.Experiment(t, dir, "")
			if tc.edit != nil {
				b, err := os.ReadFile(exp)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(exp, []byte(tc.edit(string(b))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := trainertest.New(t, exp, tc.set, false)
			if err == nil {
				t.Fatal("New succeeded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for _, p := range []string{filepath.Join(dir, "out"), filepath.Join(dir, "cache")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created before the missing input was found", p)
				}
			}
		})
	}
}
