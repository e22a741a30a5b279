package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const validExperiment = `name = "t"
seed = 3

[model]
tokenizer = "tok"
max_length = 16

[model.random]
arch = "bert"
layers = 2
hidden = 32
heads = 2
intermediate = 64
max_positions = 64

[data]
root = "data"
corpora = ["woz2"]

[objective]
name = "dse"
temperature = 0.05

[train]
batch_size = 8
max_steps = 10
lr = 1e-3
head_lr = 1e-2
`

func writeExperiment(t *testing.T, body string) string {
	t.Helper()
	return writeExperimentIn(t, t.TempDir(), body)
}

// writeExperimentIn writes an experiment file as dir/exp.toml and returns its path.
func writeExperimentIn(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "exp.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadExperiment(t *testing.T) {
	e, err := Load(writeExperiment(t, validExperiment), []string{"train.lr=5e-4", "model.random.layers = 3", "data.pairs=dse2-1", "objective.mode=orig"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Train.LR != 5e-4 || e.Model.Random.Layers != 3 || e.Model.Random.Hidden != 32 || e.Data.Pairs != "dse2-1" {
		t.Errorf("overrides not applied: lr %g layers %d hidden %d pairs %q", e.Train.LR, e.Model.Random.Layers, e.Model.Random.Hidden, e.Data.Pairs)
	}
	if e.Objective["mode"] != "orig" || e.Objective["temperature"] != 0.05 {
		t.Errorf("objective table %v", e.Objective)
	}
	if e.OutputDir != filepath.Join("runs", "t") || e.Train.GradAccumulation != 1 || e.Model.Truncation != "right" {
		t.Errorf("defaults not filled: %+v", e)
	}
}

func TestLoadExperimentRejects(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		set        []string
		want       string
	}{
		{"misspelled key", strings.Replace(validExperiment, "batch_size", "batch_sise", 1), nil, `exp.toml:25: unknown key "train.batch_sise"`},
		{"unknown table", validExperiment + "\n[trian]\nlr = 1\n", nil, `unknown key "trian.lr"`},
		{"wrong type", strings.Replace(validExperiment, "batch_size = 8", `batch_size = "8"`, 1), nil, `exp.toml:25: (last key "train.batch_size"): incompatible types`},
		{"syntax", validExperiment + "\nseed = = 1\n", nil, "exp.toml:30"},
		{"override unknown key", validExperiment, []string{"train.learning_rate=1"}, `unknown key "train.learning_rate"`},
		{"override wrong type", validExperiment, []string{"train.batch_size=big"}, "batch_size"},
		{"override malformed", validExperiment, []string{"train.lr"}, "want section.key=value"},
		{"batch of one", validExperiment, []string{"train.batch_size=1"}, "batch_size must be at least 2"},
		{"dropout of a random backbone", validExperiment, []string{"model.dropout=0.2"}, "model.dropout is for a pretrained backbone"},
		{"unknown distributed key", validExperiment, []string{"distributed.world=2"}, `unknown key "distributed.world"`},
		{"unknown backend", validExperiment, []string{"distributed.backend=mpi"}, `distributed.backend "mpi"`},
		{"no objective", strings.Replace(validExperiment, `name = "dse"`, "", 1), nil, "objective.name is required"},
		{"both backbones", validExperiment, []string{"model.backbone=bert-base-uncased"}, "not both or neither"},
		{"bad optimizer", validExperiment, []string{"train.optimizer=sgd"}, `optimizer "sgd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeExperiment(t, tc.body), tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
