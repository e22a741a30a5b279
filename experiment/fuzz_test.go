package experiment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadExperiment feeds Load arbitrary file bytes and an optional --set override. It must
// never panic; an error must name the file (or the override); an experiment it accepts must satisfy what
// validate promises and load the same way twice.
//
//	go test -run XXX -fuzz FuzzLoadExperiment -fuzztime 60s -fuzzminimizetime 3s ./experiment
func FuzzLoadExperiment(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("..", "experiments", "*.toml"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no experiments to seed the fuzzer with (%v)", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
		f.Add(b, "train.lr=1e-3")
		f.Add(b, "model.random.layers=2")
	}
	f.Add([]byte(validExperiment), "objective.mode=orig")
	f.Add([]byte(validExperiment), `data.corpora=["woz2"]`)
	f.Add([]byte(validExperiment+"\n[model.random]\n"), "")
	f.Add([]byte(""), "name")
	f.Fuzz(func(t *testing.T, src []byte, set string) {
		path := filepath.Join(t.TempDir(), "exp.toml")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		e, err := Load(path, sets)
		if err != nil {
			if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), "--set") {
				t.Fatalf("error names neither the file nor the override: %v", err)
			}
			return
		}
		tr := e.Train
		switch {
		case e.Name == "" || e.OutputDir == "":
			t.Fatalf("accepted without a name or output_dir: %+v", e)
		case (e.Model.Backbone == "") == (e.Model.Random == nil):
			t.Fatalf("accepted with backbone %q and random %v", e.Model.Backbone, e.Model.Random)
		case e.Model.MaxLength < 2 || (e.Model.Truncation != "right" && e.Model.Truncation != "left"):
			t.Fatalf("accepted max_length %d truncation %q", e.Model.MaxLength, e.Model.Truncation)
		case tr.BatchSize < 2 || tr.LogEvery < 1 || tr.CheckpointEvery < 1 || tr.KeepCheckpoints < 1 || tr.GradAccumulation < 1:
			t.Fatalf("accepted train %+v", tr)
		case !(tr.LR > 0) || math.IsInf(tr.LR, 0) || !(tr.HeadLR > 0) || math.IsInf(tr.HeadLR, 0):
			t.Fatalf("accepted lr %v head_lr %v", tr.LR, tr.HeadLR)
		case tr.Epochs < 1 && tr.MaxSteps < 1:
			t.Fatalf("accepted epochs %d max_steps %d", tr.Epochs, tr.MaxSteps)
		}
		if name, _ := e.Objective["name"].(string); name == "" {
			t.Fatalf("accepted objective %v", e.Objective)
		}
		again, err := Load(path, sets)
		if err != nil {
			t.Fatalf("loads once, then fails: %v", err)
		}
		if e.Digest() != again.Digest() {
			t.Fatalf("two loads differ: %+v\n%+v", e, again)
		}
	})
}
