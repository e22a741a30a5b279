package trainer_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"convrep/trainer/trainertest"
)

// The trainer's end-to-end tests train through trainertest, the harness the objectives' end-to-end tests
// share; export_test.go lends them the internals they look into.

// finishedRun trains the tiny experiment for three steps, checkpointing each (steps 2 and 3 are kept), and
// returns its file and output folder.
func finishedRun(t *testing.T) (exp, out string) {
	t.Helper()
	dir := t.TempDir()
	exp = trainertest.Experiment(t, dir, "")
	if err := trainertest.Run(t, exp, []string{"train.max_steps=3", "train.checkpoint_every=1"}, false); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "out")
	if steps := trainertest.CheckpointSteps(t, out); fmt.Sprint(steps) != "[2 3]" {
		t.Fatalf("checkpoints at %v, want [2 3]", steps)
	}
	return exp, out
}
