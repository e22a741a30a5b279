package evaluatecmd

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/evaluate/finetune"
	"convrep/evaluate/suite"
	"convrep/models"
)

// The fine-tuning flags reach the run's settings: defaults from the --protocol (DSE App. B.1, FutureTOD App. B;
// the values themselves are checked against the papers in evaluate/finetune), a flag given wins, --pooling
// is passed through.
func TestFinetuneFlagsResolve(t *testing.T) {
	probe := suite.ProbeProtocol
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
		var cm suite.Common
		var f ftFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		register(fs, &cm, -1)
		f.register(fs, c.task, c.fixed)
		if err := fs.Parse(append([]string{"--model", "no-such-model"}, strings.Fields(c.args)...)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, source, err := f.resolve(fs, &cm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want || source == "" {
			t.Errorf("%s: %+v (from %q), want %+v", c.name, got, source, c.want)
		}
		if s := f.settings(&cm, source); s["pooling"] != string(c.want.Pooling) || s["max_length"] != c.want.MaxLength {
			t.Errorf("%s: settings %v", c.name, s)
		}
	}
	for _, args := range []string{"--protocol bert", "--dropout 1", "--eval-every 0", "--ft-batch-size 0", "--pooling max"} {
		var cm suite.Common
		var f ftFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		register(fs, &cm, -1)
		f.register(fs, finetune.TaskActs, nil)
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.resolve(fs, &cm); err == nil {
			t.Errorf("%s accepted", args)
		}
	}
}

// The similarity tasks' --max-length defaults are DSE App. B.1's: 64 intent and out-of-scope, 128 response
// selection; the fine-tuning tasks leave it to the --protocol (-1).
func TestMaxLengthDefaults(t *testing.T) {
	for task, want := range map[string]string{"intent": "64", "oos": "64", "response": "128", "acts": "-1", "finetune-intent": "-1",
		"finetune-response": "-1", "probe": "-1", "suite": "-1"} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		err = dispatch(context.Background(), []string{task, "--help"}, zap.NewNop())
		os.Stderr = stderr
		w.Close()
		help, _ := io.ReadAll(r)
		r.Close()
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s --help: %v", task, err)
		}
		m := regexp.MustCompile(`-max-length int\n[^\n]*\(default (-?\d+)\)`).FindSubmatch(help)
		if m == nil || string(m[1]) != want || !strings.Contains(string(help), "DSE App. B.1") {
			t.Errorf("%s: --max-length default %q, want %s:\n%s", task, m, want, help)
		}
	}
}
