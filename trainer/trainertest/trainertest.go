// Package trainertest is the one harness of the tests that train: the tiny experiment file (a random BERT
// of two layers of width 32 on a few hundred woz2 pairs, about 50 ms a step on one libtorch thread),
// training one in the test's process as cmd/train does, starting cmd/train itself, and the checks on what a
// run leaves (its checkpoints, files equal byte for byte, finite weights, metrics lines). The trainer's own
// tests, each objective's end-to-end tests (objectives/<name>) and cmd/internal/traincmd use it; what an
// objective trains with lives in that objective's test.
package trainertest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"convrep/experiment"
	"convrep/internal/devtest"
	"convrep/internal/shared"
	"convrep/trainer"
)

// Run loads the experiment file at path with overrides (--set) and trains it in this process as cmd/train
// does (trainer.New, then Run), resuming its newest checkpoint when resume is set.
func Run(t *testing.T, path string, overrides []string, resume bool) error {
	t.Helper()
	tr, err := New(t, path, overrides, resume)
	if err != nil {
		return err
	}
	return tr.Run(context.Background(), trainer.Options{Resume: resume})
}

// New loads the experiment file at path with overrides and builds its trainer without running it.
func New(t *testing.T, path string, overrides []string, resume bool) (*trainer.Trainer, error) {
	t.Helper()
	e, err := experiment.Load(path, overrides)
	if err != nil {
		return nil, err
	}
	return trainer.New(context.Background(), e, trainer.Options{Resume: resume}, zaptest.NewLogger(t))
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

// Tiny is an experiment file on a tiny random BERT and the shared corpora, the one every test that trains
// writes: its output goes to out/ beside the file. A zero field takes the default its comment names; Data,
// Objective and Train are their tables' lines.
type Tiny struct {
	Name      string // "tiny"
	Seed      int    // 7
	MaxLength int    // model.max_length: 16
	Device    string // model.device; "" leaves it out (the CPU)
	// Backbone starts from a model folder (its own tokenizer) in place of the random BERT.
	Backbone string
	// The random BERT's sizes: 2 layers of width 32, 2 heads, an intermediate width of 64; 64 positions.
	Layers, Hidden, Heads, Intermediate int
	Dropout                             float64 // model.random.dropout
	Corpora                             string  // a TOML list: ["woz2"]
	Data                                string  // [data]'s lines beside root and corpora: max_examples, cache_dir, ...
	Objective                           string  // [objective]'s lines, its name first
	Train                               string  // [train]'s lines
}

// Write writes the experiment file as dir/exp.toml, its output_dir dir/out, and returns its path.
func (c Tiny) Write(t *testing.T, dir string) string {
	t.Helper()
	tok, root := Data(t)
	model := fmt.Sprintf("tokenizer = %q\n", tok)
	if c.Backbone != "" {
		model = fmt.Sprintf("backbone = %q\n", c.Backbone)
	}
	model += fmt.Sprintf("max_length = %d\n", cmp.Or(c.MaxLength, 16))
	if c.Device != "" {
		model += fmt.Sprintf("device = %q\n", c.Device)
	}
	if c.Backbone == "" {
		model += fmt.Sprintf(`
[model.random]
arch = "bert"
layers = %d
hidden = %d
heads = %d
intermediate = %d
max_positions = 64
dropout = %v
`, cmp.Or(c.Layers, 2), cmp.Or(c.Hidden, 32), cmp.Or(c.Heads, 2), cmp.Or(c.Intermediate, 64), c.Dropout)
	}
	body := fmt.Sprintf(`name = %q
output_dir = %q
seed = %d

[model]
%s
[data]
root = %q
corpora = %s
%s
[objective]
%s
[train]
%s`, cmp.Or(c.Name, "tiny"), filepath.Join(dir, "out"), cmp.Or(c.Seed, 7), model, root, cmp.Or(c.Corpora, `["woz2"]`),
		lines(c.Data), lines(c.Objective), lines(c.Train))
	p := filepath.Join(dir, "exp.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Experiment writes the tiny experiment the trainer's tests train (DSE, 512 woz2 pairs, 30 steps of 16, a
// checkpoint every 3) with its output under dir (output_dir is dir/out, the pairs cache dir/cache unless cache
// is given), and returns the file's path. Its dropout draws from libtorch's generator, so a resume must
// restore that generator's state; its device is CONVREP_TEST_DEVICE's (internal/devtest), and on a GPU it is
// deterministic, what makes the resumed runs bit-identical there.
func Experiment(t *testing.T, dir, cache string) string {
	t.Helper()
	if cache == "" {
		cache = filepath.Join(dir, "cache")
	}
	return Tiny{
		Device:    devtest.Name(),
		Dropout:   0.1,
		Data:      fmt.Sprintf("max_examples = 512\ncache_dir = %q", cache),
		Objective: `name = "dse"`,
		Train: fmt.Sprintf(`batch_size = 16
max_steps = 30
lr = 1e-3
head_lr = 3e-3
checkpoint_every = 3
log_every = 1
threads = 1
deterministic = %v`, devtest.Name() != "cpu"),
	}.Write(t, dir)
}

// lines is a table's lines ending in one newline ("" stays empty).
func lines(s string) string {
	if s = strings.TrimRight(s, "\n"); s == "" {
		return ""
	}
	return s + "\n"
}
