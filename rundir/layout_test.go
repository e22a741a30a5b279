package rundir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"convrep/safetensors"
)

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The checkpoints list in step order, Newest is the last, and Prune keeps the newest and drops torn writes.
func TestCheckpointsNewestPrune(t *testing.T) {
	r := At(t.TempDir())
	if _, err := r.Newest(); err == nil {
		t.Fatal("Newest of a run without checkpoints: no error")
	}
	for _, s := range []int64{100, 5, 20} {
		touch(t, r.CheckpointPath(s))
	}
	torn := filepath.Join(r.CheckpointDir(), ".step-000000200.safetensors.tmp-1")
	touch(t, torn)
	paths, err := r.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{r.CheckpointPath(5), r.CheckpointPath(20), r.CheckpointPath(100)}; !slices.Equal(paths, want) {
		t.Fatalf("Checkpoints = %v, want %v", paths, want)
	}
	if n, err := r.Newest(); err != nil || n != r.CheckpointPath(100) {
		t.Fatalf("Newest = %s, %v", n, err)
	}
	if err := r.Prune(2); err != nil {
		t.Fatal(err)
	}
	if paths, _ := r.Checkpoints(); !slices.Equal(paths, []string{r.CheckpointPath(20), r.CheckpointPath(100)}) {
		t.Fatalf("after Prune(2): %v", paths)
	}
	if _, err := os.Stat(torn); !os.IsNotExist(err) {
		t.Fatalf("torn write left: %v", err)
	}
}

// StepOf reads the step CheckpointPath wrote, and refuses other names.
func TestStepOf(t *testing.T) {
	if s, ok := StepOf(At("x").CheckpointPath(1234)); !ok || s != 1234 {
		t.Fatalf("StepOf = %d, %v", s, ok)
	}
	for _, bad := range []string{"step-.safetensors", "step-12.bin", "model.safetensors", "step-1234567890123456789.safetensors"} {
		if _, ok := StepOf(bad); ok {
			t.Errorf("StepOf(%q) ok", bad)
		}
	}
}

// Open takes a finished run only; IsCheckpointOf tells the run's own checkpoints from others.
func TestOpenAndIsCheckpointOf(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || IsRun(dir) {
		t.Fatal("Open of a folder without model/config.json: no error")
	}
	touch(t, filepath.Join(dir, "model", "config.json"))
	r, err := Open(dir)
	if err != nil || !IsRun(dir) {
		t.Fatal(err)
	}
	if ok, err := r.IsCheckpointOf(r.CheckpointPath(3)); err != nil || !ok {
		t.Errorf("own checkpoint: %v, %v", ok, err)
	}
	if ok, _ := r.IsCheckpointOf(filepath.Join(dir, "step-000000003.safetensors")); ok {
		t.Error("a file outside checkpoints/ counted as the run's")
	}
}

// Weights gives every tensor of the file by its name.
func TestWeights(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.safetensors")
	ts := []safetensors.Tensor{
		{Name: "param/a", DType: "F32", Shape: []int64{1}, Data: make([]byte, 4)},
		{Name: "optim/a", DType: "F32", Shape: []int64{1}, Data: make([]byte, 4)},
	}
	if err := safetensors.WriteFile(path, nil, ts); err != nil {
		t.Fatal(err)
	}
	w, err := Weights(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 || w["param/a"].DType != "F32" {
		t.Fatalf("Weights = %v", w)
	}
}
