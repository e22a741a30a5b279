package traincmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"convrep/internal/shared"
)

// tinyRun is an experiment of the tests that start cmd/train: a random BERT of the given sizes on the shared
// corpora, its output in Dir/out and its cache in Dir/cache. Train holds the [train] table's lines.
type tinyRun struct {
	Dir, Device                         string
	Layers, Hidden, Heads, Intermediate int
	Corpora                             string // a TOML list
	MaxExamples                         int    // 0: all
	Train                               string
}

// write writes the experiment file in r.Dir and returns its path.
func (r tinyRun) write(t *testing.T) string {
	t.Helper()
	tok := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	root := shared.MustPath(t, "data", "pretrain")
	maxExamples := ""
	if r.MaxExamples > 0 {
		maxExamples = fmt.Sprintf("max_examples = %d\n", r.MaxExamples)
	}
	body := fmt.Sprintf(`name = "tiny"
output_dir = %q
seed = 7

[model]
tokenizer = %q
max_length = 16
device = %q

[model.random]
arch = "bert"
layers = %d
hidden = %d
heads = %d
intermediate = %d
max_positions = 64

[data]
root = %q
corpora = %s
%scache_dir = %q

[objective]
name = "dse"

[train]
%s`, r.out(), tok, r.Device, r.Layers, r.Hidden, r.Heads, r.Intermediate, root, r.Corpora, maxExamples,
		filepath.Join(r.Dir, "cache"), r.Train)
	path := filepath.Join(r.Dir, "tiny.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (r tinyRun) out() string { return filepath.Join(r.Dir, "out") }

// trainCommand is cmd/train itself on args (this test binary started again as it, TestMain), with --quiet.
func trainCommand(args string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CONVREP_FAKE_WORKER=train", "CONVREP_TRAIN_ARGS=--quiet "+args)
	return cmd
}
