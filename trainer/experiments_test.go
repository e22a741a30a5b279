package trainer_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap/zaptest"

	"convrep/experiment"
	"convrep/internal/shared"
	"convrep/objectives"
	"convrep/trainer"
)

// tinyOverrides scale an experiment file down to a tiny backbone and a few woz2 dialogues: the sizes that
// cannot fit a 2-layer, 64-position encoder (max_length, the layers DialogueCSE freezes and FutureTOD
// distils) and the data. Everything else stays as the file says.
func tinyOverrides(t *testing.T, e *experiment.Experiment) []string {
	t.Helper()
	sets := []string{
		"data.root=" + fmt.Sprintf("%q", shared.MustPath(t, "data", "pretrain")), `data.corpora=["woz2"]`,
		"data.max_examples=256", "data.cache_dir=" + fmt.Sprintf("%q", t.TempDir()), "model.max_length=32",
		"model.device=cpu",
	}
	if _, ok := e.Objective["freeze_layers"]; ok {
		sets = append(sets, "objective.freeze_layers=1")
	}
	if _, ok := e.Objective["top_k_layers"]; ok {
		sets = append(sets, "objective.top_k_layers=2")
	}
	if _, ok := e.Objective["segment_encoder"]; ok {
		// MGT's segment encoder is a trained run (objectives/mgt's TestSegmentsComeFromTheNamedResponseEncoder
		// loads one); none exists here, so the pool is ordered by the tiny backbone.
		sets = append(sets, `objective.segment_encoder=""`)
	}
	return sets
}

// tinyFixture is the tiny HuggingFace checkpoint of the experiment's architecture family.
func tinyFixture(t *testing.T, e *experiment.Experiment) string {
	t.Helper()
	family := e.Model.Backbone
	if e.Model.Random != nil {
		family = e.Model.Random.Arch
	}
	switch {
	case strings.Contains(family, "distilbert"):
		return shared.MustPath(t, "fixtures", "tiny-distilbert")
	case strings.Contains(family, "roberta"):
		return shared.MustPath(t, "fixtures", "tiny-roberta")
	}
	return shared.MustPath(t, "fixtures", "tiny-bert")
}

// Every file of experiments/ loads fully as users run it, its [objective] table included, and its objective
// builds on a tiny backbone of its family with its parameter groups, its dataset and a finite loss on one
// batch. Every registered objective is used by some file: a new objective comes with an experiment.
func TestExperimentFilesBuild(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "experiments", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no experiment files (%v)", err)
	}
	used := map[string]bool{}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".toml"), func(t *testing.T) {
			full, err := experiment.Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.ToLower(full.Objective["name"].(string))
			used[name] = true
			e, err := experiment.Load(path, tinyOverrides(t, full))
			if err != nil {
				t.Fatal(err)
			}
			log := zaptest.NewLogger(t)
			dir := tinyFixture(t, e)
			bb, err := e.Build(dir, dir, e.Seed, gotch.CPU, log)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := e.ObjectiveConfig().Build(bb.Model)
			if err != nil {
				t.Fatal(err)
			}
			if obj.Name() != name {
				t.Errorf("objective %q calls itself %q", name, obj.Name())
			}
			if _, _, err := trainer.OptimGroups(obj, bb.Model, e.Train); err != nil {
				t.Fatalf("parameter groups: %v", err)
			}
			files, err := trainer.CorpusFiles(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			data, err := obj.Dataset(trainer.DataEnv(e, bb, files, 1, gotch.CPU, log))
			if err != nil {
				t.Fatal(err)
			}
			n := min(e.Train.BatchSize, data.Len(), 16)
			b, err := data.Batch(slices.Collect(func(yield func(int) bool) {
				for i := range n {
					if !yield(i) {
						return
					}
				}
			}), gotch.CPU)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Drop()
			loss, _, err := obj.Loss(b.Value, true)
			if err != nil {
				t.Fatal(err)
			}
			defer loss.MustDrop()
			if v := loss.Float64Values()[0]; math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("loss %v", v)
			}
		})
	}
	for _, name := range objectives.Names() {
		if !used[name] && name != probeName && name != watchedName && name != scriptedName { // the tests' own wrappers
			t.Errorf("objective %s is registered but no experiment file uses it", name)
		}
	}
}
