// Package trainertest is the one harness of the tests that train: the tiny experiment (a 2-layer random BERT on
// a few hundred woz2 pairs, about 50 ms a step on one libtorch thread), running an experiment file as cmd/train
// does, and the checks on what a run leaves (its checkpoints, files equal byte for byte, finite weights). The
// trainer's own tests and each objective's end-to-end tests (objectives/<name>) use it.
package trainertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/internal/devtest"
	"convrep/internal/shared"
	"convrep/rundir"
	"convrep/safetensors"
)

// Trainer trains the experiment e, resuming its newest checkpoint when resume is set, as cmd/train does:
// trainer.New and Run. This package cannot import the trainer, whose own tests import it, so each caller
// passes it.
type Trainer func(ctx context.Context, e *experiment.Experiment, resume bool, log *zap.Logger) error

// Run loads the experiment file at path with overrides (--set) and trains it with train.
func Run(t *testing.T, train Trainer, path string, overrides []string, resume bool) error {
	t.Helper()
	e, err := experiment.Load(path, overrides)
	if err != nil {
		return err
	}
	return train(context.Background(), e, resume, zaptest.NewLogger(t))
}

// Data returns the tokenizer folder and the corpus root the tiny experiments read, failing the test
// when the shared data (the bert-base-uncased vocabulary, woz2) are missing.
func Data(t *testing.T) (tok, root string) {
	t.Helper()
	tok = shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	root = shared.MustPath(t, "data", "pretrain")
	for _, p := range []string{filepath.Join(tok, "vocab.txt"), filepath.Join(root, "woz2")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("shared data missing: %v", err)
		}
	}
	return tok, root
}

// Experiment writes the experiment the end-to-end tests train, with its output under dir (output_dir
// is dir/out, the pairs cache dir/cache unless cache is given), and returns the file's path.
func Experiment(t *testing.T, dir, cache string) string {
	t.Helper()
	if cache == "" {
		cache = filepath.Join(dir, "cache")
	}
	tok, root := Data(t)
	body := fmt.Sprintf(`name = "tiny"
output_dir = %q
seed = 7

[model]
tokenizer = %q
max_length = 16
device = %q  # cpu, or cuda under scripts/gpu_check.sh (internal/devtest)

[model.random]
arch = "bert"
layers = 2
hidden = 32
heads = 2
intermediate = 64
max_positions = 64
dropout = 0.1  # dropout draws from libtorch's generator, so a resume must restore its state

[data]
root = %q
corpora = ["woz2"]
max_examples = 512
cache_dir = %q

[objective]
name = "dse"

[train]
batch_size = 16
max_steps = 30
lr = 1e-3
head_lr = 3e-3
checkpoint_every = 3
log_every = 1
threads = 1
deterministic = %v  # on a GPU, what makes the resumed runs bit-identical
`, filepath.Join(dir, "out"), tok, devtest.Name(), root, cache, devtest.Name() != "cpu")
	return WriteExperiment(t, dir, body)
}

// CheckpointSteps lists the steps of the checkpoints under out, ascending.
func CheckpointSteps(t *testing.T, out string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(rundir.At(out).CheckpointDir())
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var steps []int64
	for _, e := range entries {
		if n, ok := rundir.StepOf(e.Name()); ok {
			steps = append(steps, n)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	return steps
}

// HashFiles maps each file directly under dir to the SHA-256 of its bytes.
func HashFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out, err := HashDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// HashDir is HashFiles returning its error.
func HashDir(dir string) (map[string][32]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][32]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out, nil
}

// SameHashes reports whether two HashFiles maps are equal.
func SameHashes(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// NonFiniteParams names the param/ tensors of a checkpoint that hold a NaN or an infinity.
func NonFiniteParams(t *testing.T, path string) []string {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	params := 0
	for _, x := range f.Tensors {
		if !strings.HasPrefix(x.Name, checkpoint.ParamPrefix) {
			continue
		}
		params++
		vs, err := x.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, v := range vs {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				bad = append(bad, x.Name)
				break
			}
		}
	}
	if params == 0 {
		t.Fatalf("%s holds no parameters", path)
	}
	return bad
}

// SameFiles compares two files byte for byte; when they differ it says which tensors do, if both are
// safetensors files.
func SameFiles(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(x, y) {
		return
	}
	t.Errorf("%s and %s differ (%d and %d bytes)", a, b, len(x), len(y))
	fx, errx := safetensors.Parse(x)
	fy, erry := safetensors.Parse(y)
	if errx != nil || erry != nil {
		return
	}
	if fmt.Sprint(fx.Metadata) != fmt.Sprint(fy.Metadata) {
		t.Errorf("metadata differs:\n%v\n%v", fx.Metadata, fy.Metadata)
	}
	shown := 0
	for _, tx := range fx.Tensors {
		ty, ok := fy.Lookup(tx.Name)
		if !ok {
			t.Errorf("tensor %s only in %s", tx.Name, a)
		} else if !bytes.Equal(tx.Data, ty.Data) && shown < 10 {
			t.Errorf("tensor %s differs", tx.Name)
			shown++
		}
	}
}

// CopyRun copies a run's output folder (its files and checkpoints) to a new folder and returns it.
func CopyRun(t *testing.T, out string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "out")
	for _, sub := range []string{"", "checkpoints"} {
		if err := os.MkdirAll(filepath.Join(dst, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(out, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(out, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, sub, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

// WriteExperiment writes an experiment file as dir/exp.toml and returns its path.
func WriteExperiment(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "exp.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
