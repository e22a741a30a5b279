package suite

import (
	"flag"
	"io"
	"strings"
	"testing"

	"convrep/evaluate/finetune"
	"convrep/models"
)

// The fine-tuning flags reach the run's settings: defaults from the --protocol (DSE App. B.1, FutureTOD App. B;
// the values themselves are checked against the papers in evaluate/finetune), a flag given wins, --pooling
// is passed through.
func TestFinetuneFlagsResolve(t *testing.T) {
	probe := ProbeProtocol
	for _, c := range []struct {
		name  string
		task  string
		fixed *finetune.Protocol
		args  string
		want  finetune.Config
	}{
		{"acts, DSE", finetune.TaskActs, nil, "",
			finetune.Config{Epochs: 100, BatchSize: 32, LR: 5e-5, EvalEvery: 30, Patience: 10, MaxLength: 32, Dropout: 0.2, Pooling: models.Mean}},
		{"acts, FutureTOD: [CLS], the model's limit", finetune.TaskActs, nil, "--protocol futuretod",
			finetune.Config{Epochs: 50, BatchSize: 16, LR: 5e-5, EvalEvery: 50, Patience: 10, MaxLength: 0, Dropout: 0, Pooling: models.CLS}},
		{"flags win", finetune.TaskActs, nil,
			"--protocol futuretod --pooling mean --ft-batch-size 4 --dropout 0.3 --max-length 48 --eval-every -1 --epochs 7 --lr 1e-4 --patience 2",
			finetune.Config{Epochs: 7, BatchSize: 4, LR: 1e-4, EvalEvery: 0, Patience: 2, MaxLength: 48, Dropout: 0.3, Pooling: models.Mean}},
		{"--pooling cls with DSE", finetune.TaskIntent, nil, "--pooling cls",
			finetune.Config{Epochs: 50, BatchSize: 16, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 64, Dropout: 0.1, Pooling: models.CLS}},
		{"--max-length -1 is the protocol's", finetune.TaskIntent, nil, "--max-length -1",
			finetune.Config{Epochs: 50, BatchSize: 16, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 64, Dropout: 0.1, Pooling: models.Mean}},
		{"response, DSE", finetune.TaskResponse, nil, "",
			finetune.Config{Epochs: 50, BatchSize: 100, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 128, Pooling: models.Mean}},
		{"probe: fixed, per epoch", "probe", &probe, "--epochs 5",
			finetune.Config{Epochs: 5, BatchSize: 32, LR: 1e-3, EvalEvery: 0, Patience: 10, MaxLength: 128, Pooling: models.Mean}},
	} {
		var cm Common
		var tuning Tuning
		f := tuningTestFlags(&cm, &tuning, c.task, c.fixed)
		if err := f.Parse(append([]string{"--model", "no-such-model"}, strings.Fields(c.args)...)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := f.Finish(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, source := tuning.Config, tuning.Source
		if got != c.want || source == "" {
			t.Errorf("%s: %+v (from %q), want %+v", c.name, got, source, c.want)
		}
		if s := tuning.settings(); s["pooling"] != string(c.want.Pooling) || s["max_length"] != c.want.MaxLength {
			t.Errorf("%s: settings %v", c.name, s)
		}
	}
	for _, args := range []string{"--protocol bert", "--dropout 1", "--eval-every 0", "--ft-batch-size 0", "--pooling max"} {
		var cm Common
		var tuning Tuning
		f := tuningTestFlags(&cm, &tuning, finetune.TaskActs, nil)
		if err := f.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if f.Finish() == nil {
			t.Errorf("%s accepted", args)
		}
	}
}

// tuningTestFlags is a fine-tuning task's flag set: Common's flags with --max-length -1, and the fine-tuning
// flags of task resolved into tuning.
func tuningTestFlags(c *Common, tuning *Tuning, task string, fixed *finetune.Protocol) *Flags {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := NewFlags(fs)
	c.flags(f, -1)
	tuningFlag(f, c, tuning, task, fixed)
	return f
}
