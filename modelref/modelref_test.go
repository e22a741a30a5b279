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

// A --model that is a local path and does not exist is said plainly, with the nearest existing path; a name
// that is not a local path is left to the hub.
func TestCheckMissingLocalPath(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	for _, dir := range []string{"runs/dse_support/model", "models/mine"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile("dse.toml", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref, want string
	}{
		{"runs/dse_suport", "--model runs/dse_suport: no such folder (did you mean runs/dse_support?)"},
		{"runs/dse_suport/model", "--model runs/dse_suport/model: no such folder (did you mean runs/dse_support/model?)"},
		{"./runs/other", "--model ./runs/other: no such folder"},
		{"models/mien", "--model models/mien: no such folder (did you mean models/mine?)"},
		{filepath.Join(work, "runs", "dse_supprt"), "--model " + filepath.Join(work, "runs", "dse_supprt") + ": no such folder (did you mean " + filepath.Join(work, "runs", "dse_support") + "?)"},
		{"dse.tmol/x/y", "--model dse.tmol/x/y: no such folder"}, // dse.toml/x/y does not exist either
		{"dsee.toml", "--model dsee.toml: no such file (did you mean dse.toml?)"},
		{"org/name", ""},          // a hub name: org is not a folder here
		{"bert-base-uncased", ""}, // a hub name
		{"runs/dse_support", ""},  // exists
	} {
		err := Check(c.ref, "")
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("Check(%q) = %q, want %q", c.ref, got, c.want)
		}
	}
	if err := Check("runs/dse_support", "runs/dse_support/checkpoints/step-1.safetensors"); err == nil ||
		err.Error() != "--checkpoint runs/dse_support/checkpoints/step-1.safetensors: no such file" {
		t.Errorf("missing checkpoint: %v", err)
	}
}
