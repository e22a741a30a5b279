package traincmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// The tests that start cmd/train write their experiments with trainer/trainertest's Tiny: a random BERT on the
// shared corpora, output in dir/out, DSE's pairs cached in dir/cache.

// dse is the [objective] table of the tests' runs.
const dse = `name = "dse"`

// cacheIn is the [data] line that keeps a run's pairs cache in dir/cache.
func cacheIn(dir string) string { return fmt.Sprintf("cache_dir = %q", filepath.Join(dir, "cache")) }

// trainCommand is cmd/train itself on args (this test binary started again as it, TestMain), with --quiet.
func trainCommand(args string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CONVREP_FAKE_WORKER=train", "CONVREP_TRAIN_ARGS=--quiet "+args)
	return cmd
}
