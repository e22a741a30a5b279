package traincmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"convrep/internal/devtest"
	"convrep/internal/shared"
)

// A training run's standard error holds the run's log and nothing per step: no libtorch warning repeated at
// every step (libtorch 2.11 printed a dozen pin_memory deprecation lines a step, models.ToDevice), so a run
// of 12 steps prints as many lines as one of 3. The run is cmd/train itself (this test binary started again as
// it), with --quiet for no progress bar, on the device of CONVREP_TEST_DEVICE: scripts/gpu_check.sh counts
// them on CUDA with the same test.
func TestStderrDoesNotGrowWithSteps(t *testing.T) {
	tok := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	root := shared.MustPath(t, "data", "pretrain")
	lines := map[int][]string{}
	for _, steps := range []int{3, 12} {
		dir := t.TempDir()
		exp := filepath.Join(dir, "quiet.toml")
		body := fmt.Sprintf(`name = "quiet"
output_dir = %q
seed = 7

[model]
tokenizer = %q
max_length = 16
device = %q

[model.random]
arch = "bert"
layers = 2
hidden = 32
heads = 2
intermediate = 64
max_positions = 64

[data]
root = %q
corpora = ["woz2"]
max_examples = 256
cache_dir = %q

[objective]
name = "dse"

[train]
batch_size = 8
max_steps = %d
lr = 1e-3
checkpoint_every = 1000
log_every = 1
threads = 1
`, filepath.Join(dir, "out"), tok, devtest.Name(), root, filepath.Join(dir, "cache"), steps)
		if err := os.WriteFile(exp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "CONVREP_FAKE_WORKER=train", "CONVREP_TRAIN_ARGS=--quiet "+exp)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%d steps: %v\n%s", steps, err, stderr.String())
		}
		lines[steps] = strings.Split(strings.TrimSpace(stderr.String()), "\n")
	}
	if a, b := len(lines[3]), len(lines[12]); a != b {
		t.Errorf("stderr: %d lines after 3 steps, %d after 12:\n%s", a, b, strings.Join(lines[12], "\n"))
	}
	for _, l := range lines[12] {
		if strings.Contains(l, "deprecated") || strings.HasPrefix(l, "[W") || strings.Contains(l, "Warning:") {
			t.Errorf("stderr holds a libtorch warning: %s", l)
		}
	}
}
