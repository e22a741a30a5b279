package trainer_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap/zaptest"

	"convrep/experiment"
	"convrep/models"
	"convrep/rundir"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// The untrained baseline the evaluation suite compares with is exactly the backbone training starts from.
func TestUntrainedIsTheStartingPoint(t *testing.T) {
	dir := t.TempDir()
	e, err := experiment.Load(trainertest.Experiment(t, dir, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := experiment.Untrained(context.Background(), e, gotch.CPU, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	base := bb.Model
	tr, err := trainer.New(context.Background(), e, trainer.Options{}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	start := tr.Backbone().Model.Params()
	if len(start) == 0 || len(start) != len(base.Params()) {
		t.Fatalf("%d parameters at the start of training, %d in the untrained backbone", len(start), len(base.Params()))
	}
	for name, p := range base.Params() {
		q, ok := start[name]
		if !ok {
			t.Fatalf("training has no parameter %s", name)
		}
		if !p.MustEqual(q, false) {
			t.Errorf("parameter %s differs between the untrained backbone and the start of training", name)
		}
	}
}

// A checkpoint loads into the experiment's backbone with the weights the run saved at that step.
func TestAtCheckpointGivesTheSavedModel(t *testing.T) {
	dir := t.TempDir()
	path := trainertest.Experiment(t, dir, "")
	if err := trainertest.Run(t, path, nil, false); err != nil {
		t.Fatal(err)
	}
	e, err := experiment.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := experiment.AtCheckpoint(context.Background(), e, rundir.At(e.OutputDir).CheckpointPath(30), gotch.CPU, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	got := bb.Model
	want, err := models.Load(filepath.Join(e.OutputDir, "model"), models.LoadOptions{Heads: &models.Heads{}, Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range want.Params() {
		if !p.MustEqual(got.Params()[name], false) {
			t.Errorf("parameter %s differs from the saved model", name)
		}
	}
	other, err := experiment.Load(path, []string{"train.lr=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := experiment.AtCheckpoint(context.Background(), other, rundir.At(e.OutputDir).CheckpointPath(30), gotch.CPU, zaptest.NewLogger(t)); err == nil {
		t.Error("a checkpoint of other settings was accepted")
	}
}

// A run trains on a thread that comes to it with autograd off, as gotch's initialisers can leave one (torch.GradOn).
func TestRunTurnsAutogradOnForItsThread(t *testing.T) {
	runtime.LockOSThread() // Run locks the goroutine's thread again: this one, with autograd off
	defer runtime.UnlockOSThread()
	path := trainertest.Experiment(t, t.TempDir(), "")
	tr, err := trainertest.New(t, path, []string{"train.max_steps=3"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.GradSetEnabled(false); err != nil {
		t.Fatal(err)
	}
	defer ts.GradSetEnabled(true)
	if err := tr.Run(context.Background(), trainer.Options{}); err != nil {
		t.Fatalf("training on a thread with autograd off: %v", err)
	}
}
