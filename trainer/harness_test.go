package trainer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"convrep/experiment"
	"convrep/trainer/trainertest"
)

// The trainer's tests train through trainertest, the harness the objectives' end-to-end tests share.

// train runs an experiment in this process, as cmd/train does.
func train(t *testing.T, path string, overrides []string, resume bool) error {
	t.Helper()
	return trainertest.Run(t, runTrainer, path, overrides, resume)
}

// runTrainer is trainertest.Trainer for this package: New, then Run.
func runTrainer(ctx context.Context, e *experiment.Experiment, resume bool, log *zap.Logger) error {
	tr, err := New(ctx, e, Options{Resume: resume}, log)
	if err != nil {
		return err
	}
	return tr.Run(ctx, Options{Resume: resume})
}

func newTrainer(t *testing.T, path string, overrides []string, resume bool) (*Trainer, error) {
	t.Helper()
	e, err := experiment.Load(path, overrides)
	if err != nil {
		return nil, err
	}
	return New(context.Background(), e, Options{Resume: resume}, zaptest.NewLogger(t))
}

// finishedRun trains the tiny experiment for three steps, checkpointing each (steps 2 and 3 are kept), and
// returns its file and output folder.
func finishedRun(t *testing.T) (exp, out string) {
	t.Helper()
	dir := t.TempDir()
	exp = trainertest.Experiment(t, dir, "")
	if err := train(t, exp, []string{"train.max_steps=3", "train.checkpoint_every=1"}, false); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "out")
	if steps := trainertest.CheckpointSteps(t, out); fmt.Sprint(steps) != "[2 3]" {
		t.Fatalf("checkpoints at %v, want [2 3]", steps)
	}
	return exp, out
}
