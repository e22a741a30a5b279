package trainer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/internal/devtest"
	"convrep/internal/shared"
	"convrep/rundir"
	"convrep/safetensors"
)

// The end-to-end tests train a tiny random BERT on a few hundred woz2 pairs: about 50 ms a step on one
// libtorch thread, so a whole run of 30 steps takes a few seconds.

// tinyData returns the tokenizer folder and the corpus root the tiny experiments read, failing the test
// when the shared data (the bert-base-uncased vocabulary, woz2) are missing.
func tinyData(t *testing.T) (tok, root string) {
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

// tinyExperiment writes the experiment the end-to-end tests train, with its output under dir (output_dir
// is dir/out, the pairs cache dir/cache unless cache is given), and returns the file's path.
func tinyExperiment(t *testing.T, dir, cache string) string {
	t.Helper()
	if cache == "" {
		cache = filepath.Join(dir, "cache")
	}
	tok, root := tinyData(t)
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
	return writeExperimentIn(t, dir, body)
}

// train runs an experiment in this process, as cmd/train does.
func train(t *testing.T, path string, overrides []string, resume bool) error {
	t.Helper()
	tr, err := newTrainer(t, path, overrides, resume)
	if err != nil {
		return err
	}
	return tr.Run(context.Background(), Options{Resume: resume})
}

func newTrainer(t *testing.T, path string, overrides []string, resume bool) (*Trainer, error) {
	t.Helper()
	e, err := experiment.Load(path, overrides)
	if err != nil {
		return nil, err
	}
	return New(context.Background(), e, Options{Resume: resume}, zaptest.NewLogger(t))
}

// stepOf reads the step out of a checkpoint's file name; -1 if it is not one.
func stepOf(name string) int64 {
	s, ok := strings.CutPrefix(filepath.Base(name), "step-")
	if !ok {
		return -1
	}
	s, ok = strings.CutSuffix(s, ".safetensors")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// checkpointSteps lists the steps of the checkpoints under out, ascending.
func checkpointSteps(t *testing.T, out string) []int64 {
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
		if n := stepOf(e.Name()); n >= 0 {
			steps = append(steps, n)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	return steps
}

// hashFiles maps each file directly under dir to the SHA-256 of its bytes.
func hashFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out, err := hashDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hashDir(dir string) (map[string][32]byte, error) {
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

func sameHashes(a, b map[string][32]byte) bool {
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

// nonFiniteParams names the param/ tensors of a checkpoint that hold a NaN or an infinity.
func nonFiniteParams(t *testing.T, path string) []string {
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

// sameFiles compares two files byte for byte; when they differ it says which tensors do, if both are
// safetensors files.
func sameFiles(t *testing.T, a, b string) {
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

// finishedRun trains the tiny experiment for three steps, checkpointing each (steps 2 and 3 are kept), and
// returns its file and output folder.
func finishedRun(t *testing.T) (exp, out string) {
	t.Helper()
	dir := t.TempDir()
	exp = tinyExperiment(t, dir, "")
	if err := train(t, exp, []string{"train.max_steps=3", "train.checkpoint_every=1"}, false); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "out")
	if steps := checkpointSteps(t, out); fmt.Sprint(steps) != "[2 3]" {
		t.Fatalf("checkpoints at %v, want [2 3]", steps)
	}
	return exp, out
}

// copyRun copies a run's output folder (its files and checkpoints) to a new folder and returns it.
func copyRun(t *testing.T, out string) string {
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

// writeExperimentIn writes an experiment file as dir/exp.toml and returns its path.
func writeExperimentIn(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "exp.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
