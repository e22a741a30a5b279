package modelref

import (
	"os"
	"path/filepath"
	"testing"

	"convrep/modelcard"
	"convrep/models"
	"convrep/models/sbert"
)

// The step of the evaluated model: its checkpoint's, its model card's (in a run folder's model/), else 0.
func TestStep(t *testing.T) {
	run := t.TempDir()
	if err := os.Mkdir(filepath.Join(run, "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (modelcard.Card{Name: "x", Objective: "dse", Steps: 200}).Write(filepath.Join(run, "model")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref, ckpt string
		want      int64
	}{
		{run, "", 200},
		{filepath.Join(run, "model"), "", 200},
		{run, filepath.Join(run, "checkpoints", "step-000000150.safetensors"), 150},
		{"experiments/x.toml", "", 0},
		{t.TempDir(), "", 0},
		{"bert-base-uncased", "", 0},
	} {
		if got := Step(c.ref, c.ckpt); got != c.want {
			t.Errorf("Step(%q, %q) = %d, want %d", c.ref, c.ckpt, got, c.want)
		}
	}
}

// A model folder's declared pooling is the default; anything else embeds by the mean, as DSE evaluates.
func TestPooling(t *testing.T) {
	run := t.TempDir()
	if err := os.MkdirAll(filepath.Join(run, "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sbert.Write(filepath.Join(run, "model"), sbert.Layout{Pooling: models.CLS, Dim: 8}); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]models.Pooling{run: models.CLS, filepath.Join(run, "model"): models.CLS,
		t.TempDir(): models.Mean, "experiments/dse_small_cpu.toml": models.Mean, "bert-base-uncased": models.Mean} {
		if got := Pooling(ref); got != want {
			t.Errorf("%s: %s, want %s", ref, got, want)
		}
	}
}
