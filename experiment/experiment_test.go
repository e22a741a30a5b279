package experiment

import (
	"encoding/json"
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
	path := writeExperiment(t, validExperiment)
	e, err := Load(path, []string{"train.lr=5e-4", "model.random.layers = 3", "data.pairs=dse2-1", "objective.mode=orig"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Train.LR != 5e-4 || e.Model.Random.Layers != 3 || e.Model.Random.Hidden != 32 || e.Data.Pairs != "dse2-1" {
		t.Errorf("overrides not applied: lr %g layers %d hidden %d pairs %q", e.Train.LR, e.Model.Random.Layers, e.Model.Random.Hidden, e.Data.Pairs)
	}
	if e.Objective["mode"] != "orig" || e.Objective["temperature"] != 0.05 {
		t.Errorf("objective table %v", e.Objective)
	}
	if e.OutputDir != filepath.Join(filepath.Dir(path), "runs", "t") || e.Train.GradAccumulation != 1 || e.Model.Truncation != "right" {
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
		{"override wrong type", validExperiment, []string{"train.batch_size=big"}, `--set train.batch_size=big: train.batch_size takes an integer, got a string "big"`},
		{"override malformed", validExperiment, []string{"train.lr"}, "want section.key=value"},
		{"batch of one", validExperiment, []string{"train.batch_size=1"}, "train.batch_size must be in [2, 1048576] (in-batch negatives need two), got 1"},
		{"dropout of a random backbone", validExperiment, []string{"model.dropout=0.2"}, "model.dropout is for a pretrained backbone"},
		{"unknown distributed key", validExperiment, []string{"distributed.world=2"}, `unknown key "distributed.world"`},
		{"unknown backend", validExperiment, []string{"distributed.backend=mpi"}, `distributed.backend "mpi"`},
		{"no objective", strings.Replace(validExperiment, `name = "dse"`, "", 1), nil, "objective.name is required"},
		{"both backbones", validExperiment, []string{"model.backbone=bert-base-uncased"}, "not both or neither"},
		{"bad optimizer", validExperiment, []string{"train.optimizer=sgd"}, `optimizer "sgd"`},
		{"a typo's layers", validExperiment, []string{"model.random.layers=100000"}, "model.random.layers = 100000: must be between 1 and 1024"},
		{"no hidden size", validExperiment, []string{"model.random.hidden=0"}, "model.random.hidden = 0: must be between 1 and 65536"},
		{"heads not dividing", validExperiment, []string{"model.random.heads=3"}, "model.random.heads = 3 does not divide model.random.hidden = 32"},
		{"longer than the positions", validExperiment, []string{"model.max_length=128"}, "model.max_length = 128 is above model.random.max_positions = 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeExperiment(t, tc.body), tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// Every [train] size is bounded, so that no --set value can make the trainer's products wrap (a batch of
// 2^32 × 2^32 examples is 0 in int64 and divided by) or overflow; each error names its key.
func TestLoadExperimentBoundsTrainSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"batch × accumulation wraps to 0", []string{"train.batch_size=4294967296", "train.grad_accumulation=4294967296"},
			"train.batch_size must be in [2, 1048576] (in-batch negatives need two), got 4294967296"},
		{"accumulation too large", []string{"train.grad_accumulation=4294967296"}, "train.grad_accumulation must be in [1, 65536], got 4294967296"},
		{"negative accumulation", []string{"train.grad_accumulation=-2"}, "train.grad_accumulation must be in [1, 65536], got -2"},
		{"examples per step", []string{"train.batch_size=1024", "train.grad_accumulation=65536"},
			"train.batch_size × train.grad_accumulation must be at most 16777216 examples per step, got 1024 × 65536"},
		{"negative batch", []string{"train.batch_size=-8"}, "train.batch_size must be in [2, 1048576]"},
		{"epochs overflow", []string{"train.epochs=9223372036854775807"}, "train.epochs must be in [0, 1048576], got 9223372036854775807"},
		{"negative epochs", []string{"train.epochs=-1"}, "train.epochs must be in [0, 1048576], got -1"},
		{"max_steps", []string{"train.max_steps=9223372036854775807"}, "train.max_steps must be in [0, 1099511627776]"},
		{"negative max_steps", []string{"train.max_steps=-1"}, "train.max_steps must be in [0, 1099511627776], got -1"},
		{"warmup_steps", []string{"train.warmup_steps=-5"}, "train.warmup_steps must be in [0, 1099511627776], got -5"},
		{"negative log_every", []string{"train.log_every=-1"}, "train.log_every must be in [1, 1099511627776], got -1"},
		{"checkpoint_every huge", []string{"train.checkpoint_every=1099511627777"}, "train.checkpoint_every must be in [1, 1099511627776]"},
		{"negative keep_checkpoints", []string{"train.keep_checkpoints=-3"}, "train.keep_checkpoints must be in [1, 65536], got -3"},
		{"threads", []string{"train.threads=100000"}, "train.threads must be in [0, 4096], got 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeExperiment(t, validExperiment), tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	// The largest values allowed still load.
	if _, err := Load(writeExperiment(t, validExperiment), []string{"train.batch_size=1024", "train.grad_accumulation=16384",
		"train.epochs=1048576", "train.max_steps=1099511627776", "train.keep_checkpoints=65536", "train.threads=4096"}); err != nil {
		t.Errorf("bounds refused: %v", err)
	}
}

// data.metalwoz_multiwoz is read; false (the default) leaves the digest of runs written before it existed as it
// was, true changes it (the pretraining data differ).
func TestMetaLWOZMultiWOZKey(t *testing.T) {
	path := writeExperiment(t, validExperiment)
	base, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, err := Load(path, []string{"data.metalwoz_multiwoz=false"})
	if err != nil {
		t.Fatal(err)
	}
	on, err := Load(path, []string{"data.metalwoz_multiwoz=true"})
	if err != nil {
		t.Fatal(err)
	}
	if base.Data.MetaLWOZMultiWOZ || !on.Data.MetaLWOZMultiWOZ {
		t.Errorf("metalwoz_multiwoz: default %v, set true %v", base.Data.MetaLWOZMultiWOZ, on.Data.MetaLWOZMultiWOZ)
	}
	if off.Digest() != base.Digest() || on.Digest() == base.Digest() {
		t.Errorf("digests: default %s, false %s, true %s", base.Digest(), off.Digest(), on.Digest())
	}
	// The digest hashes the configuration's JSON: with the key false it must not be there at all.
	b, err := json.Marshal(base.Data)
	if err != nil || strings.Contains(string(b), "metalwoz") {
		t.Errorf("data config JSON %s (%v) names metalwoz_multiwoz", b, err)
	}
}

// The validation keys: valid_share needs eval_every, a multiple of log_every; eval_every and the patience
// need a share; off (the default) leaves existing digests as they were; the share changes the digest (the
// training data differ), eval_every and the patience do not (they change no step).
func TestValidationKeys(t *testing.T) {
	path := writeExperiment(t, validExperiment)
	base, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(base.Train); strings.Contains(string(b), "valid") || strings.Contains(string(b), "eval") {
		t.Errorf("train config JSON %s names a validation key while validation is off", b)
	}
	on := []string{"train.valid_share=0.01", "train.eval_every=20", "train.log_every=10"}
	a, err := Load(path, on)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(path, append(on[:len(on):len(on)], "train.eval_every=40", "train.early_stopping_patience=3"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() == base.Digest() || a.Digest() != b.Digest() {
		t.Errorf("digests: off %s, share 0.01 %s, with other eval_every and patience %s", base.Digest(), a.Digest(), b.Digest())
	}
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"train.valid_share=0.01"}, "eval_every"},
		{[]string{"train.valid_share=0.6", "train.eval_every=10"}, "valid_share"},
		{[]string{"train.valid_share=-0.1", "train.eval_every=10"}, "valid_share"},
		{[]string{"train.eval_every=10"}, "valid_share > 0"},
		{[]string{"train.early_stopping_patience=2"}, "valid_share > 0"},
		{[]string{"train.valid_share=0.01", "train.eval_every=15", "train.log_every=10"}, "multiple of train.log_every"},
		{[]string{"train.valid_share=0.01", "train.eval_every=10", "train.early_stopping_patience=-1"}, "early_stopping_patience"},
	} {
		if _, err := Load(path, tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.set, err, tc.want)
		}
	}
}

// The objective fills the [train] keys a file leaves out where its authors' code differs (objectives.TrainDefaults):
// DSE's head at lr × 100 (pretrain/main.py --lr_scale) and its last partial batch kept (drop_last=False); the
// others' head at lr and the last partial batch dropped. A key the file sets wins, and a dropped last batch
// leaves the digest as it was before the setting.
func TestObjectiveTrainDefaults(t *testing.T) {
	noHeadLR := strings.Replace(validExperiment, "head_lr = 1e-2\n", "", 1)
	simcse := strings.Replace(strings.Replace(noHeadLR, `name = "dse"`, `name = "simcse"`, 1), "temperature = 0.05\n", "", 1)
	for _, tc := range []struct {
		name, body string
		set        []string
		headLR     float64
		scale      float64 // 0: head_lr was set
		keepsLast  bool
	}{
		{"dse, head_lr left out", noHeadLR, nil, 1e-3 * 100, 100, true},
		{"dse, head_lr set", validExperiment, nil, 1e-2, 0, true},
		{"dse, drop_last set", noHeadLR, []string{"train.drop_last=true"}, 1e-3 * 100, 100, false},
		{"simcse, head_lr left out", simcse, nil, 1e-3, 1, false},
		{"simcse, drop_last false", simcse, []string{"train.drop_last=false", "train.head_lr=0.5"}, 0.5, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Load(writeExperiment(t, tc.body), tc.set)
			if err != nil {
				t.Fatal(err)
			}
			scale, defaulted := e.HeadLRDefault()
			if e.Train.HeadLR != tc.headLR || scale != tc.scale || defaulted != (tc.scale != 0) {
				t.Errorf("head_lr %g (scale %g, defaulted %v), want %g (scale %g)", e.Train.HeadLR, scale, defaulted, tc.headLR, tc.scale)
			}
			if e.KeepsLastBatch() != tc.keepsLast {
				t.Errorf("keeps the last batch: %v, want %v", e.KeepsLastBatch(), tc.keepsLast)
			}
		})
	}
	dropped, err := Load(writeExperiment(t, validExperiment), []string{"train.drop_last=true"})
	if err != nil {
		t.Fatal(err)
	}
	c := *dropped
	c.Train.DropLast = nil
	kept, err := Load(writeExperiment(t, validExperiment), nil)
	if err != nil {
		t.Fatal(err)
	}
	if dropped.Digest() != c.Digest() || kept.Digest() == dropped.Digest() {
		t.Errorf("digests: drop_last true %s, unset %s, false %s; want the first two equal, the third apart",
			dropped.Digest(), c.Digest(), kept.Digest())
	}
}

// train.tensorboard is on when left out, may be switched off, and is output only: the digest is the one the
// experiment had before the setting existed (pinned here), whatever its value, so earlier checkpoints resume.
func TestTensorBoardKey(t *testing.T) {
	path := writeExperiment(t, validExperiment)
	const before = "6731350704bd4f35" // validExperiment's digest at the commit before train.tensorboard
	for _, c := range []struct {
		set  []string
		want bool
	}{
		{nil, true},
		{[]string{"train.tensorboard=true"}, true},
		{[]string{"train.tensorboard=false"}, false},
	} {
		e, err := Load(path, c.set)
		if err != nil {
			t.Fatal(err)
		}
		if e.WritesTensorBoard() != c.want {
			t.Errorf("%v: writes TensorBoard %v, want %v", c.set, e.WritesTensorBoard(), c.want)
		}
		if d := e.Digest(); d != before {
			t.Errorf("%v: digest %s, want %s", c.set, d, before)
		}
	}
	if _, err := Load(path, []string{"train.tensorboard=1"}); err == nil || !strings.Contains(err.Error(), "tensorboard") {
		t.Errorf("a number for train.tensorboard: %v", err)
	}
}

// An unknown key in any section comes with the nearest known one, from the file or from --set; a --set value
// of the wrong type is reported as the --set flag's, not at the line of a document the user never wrote.
func TestKeyMessages(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		set        []string
		want       string
	}{
		{"[train]", strings.Replace(validExperiment, "batch_size", "batch_sise", 1), nil,
			`exp.toml:25: unknown key "train.batch_sise" (did you mean "train.batch_size"?)`},
		{"[model]", strings.Replace(validExperiment, "max_length", "max_lenght", 1), nil,
			`exp.toml:6: unknown key "model.max_lenght" (did you mean "model.max_length"?)`},
		{"[model.random]", strings.Replace(validExperiment, "layers = 2", "layer = 2", 1), nil,
			`unknown key "model.random.layer" (did you mean "model.random.layers"?)`},
		{"[data]", strings.Replace(validExperiment, "corpora", "corpra", 1), nil,
			`exp.toml:18: unknown key "data.corpra" (did you mean "data.corpora"?)`},
		{"[objective]", strings.Replace(validExperiment, "temperature", "temprature", 1), nil,
			"unknown setting temprature (did you mean temperature? known: "},
		{"a table", validExperiment + "\n[trian]\nlr = 1\n", nil, `unknown key "trian.lr" (did you mean "train.lr"?)`},
		{"top level", "sed = 1\n" + validExperiment, nil, `exp.toml:1: unknown key "sed" (did you mean "seed"?)`},
		{"--set [train]", validExperiment, []string{"train.bach_size=3"}, `--set train.bach_size=3: unknown key "train.bach_size" (did you mean "train.batch_size"?)`},
		{"--set [data]", validExperiment, []string{"data.min_word=3"}, `--set data.min_word=3: unknown key "data.min_word" (did you mean "data.min_words"?)`},
		{"--set [objective]", validExperiment, []string{"objective.temprature=0.1"}, "unknown setting temprature (did you mean temperature?"},
		{"--set a word for a number", validExperiment, []string{"train.batch_size=thirty"},
			`--set train.batch_size=thirty: train.batch_size takes an integer, got a string "thirty"`},
		{"--set a list for a number", validExperiment, []string{"train.lr=[1]"}, "--set train.lr=[1]: train.lr takes a number, got a list [1]"},
		{"--set a number for a flag", validExperiment, []string{"train.tensorboard=1"},
			"--set train.tensorboard=1: train.tensorboard takes true or false, got an integer 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeExperiment(t, tc.body), tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "toml: line") {
				t.Errorf("%v: names a line of the one-key document --set decodes", err)
			}
		})
	}
	// Nothing near enough: no guess.
	_, err := Load(writeExperiment(t, validExperiment), []string{"train.xyzzy=1"})
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("train.xyzzy: %v, want an error without a guess", err)
	}
}
