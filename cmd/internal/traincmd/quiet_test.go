package traincmd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"convrep/internal/devtest"
	"convrep/trainer/trainertest"
)

// A training run's standard error holds the run's log and nothing per step: no libtorch warning repeated at
// every step (libtorch 2.11 printed a dozen pin_memory deprecation lines a step, models.ToDevice), so a run
// of 12 steps prints as many lines as one of 3. The run is cmd/train itself (this test binary started again as
// it), with --quiet for no progress bar, on the device of CONVREP_TEST_DEVICE: scripts/gpu_check.sh counts
// them on CUDA with the same test.
func TestStderrDoesNotGrowWithSteps(t *testing.T) {
	lines := map[int][]string{}
	for _, steps := range []int{3, 12} {
		dir := t.TempDir()
		cmd := trainCommand(trainertest.Tiny{Device: devtest.Name(), Data: "max_examples = 256\n" + cacheIn(dir), Objective: dse,
			Train: fmt.Sprintf("batch_size = 8\nmax_steps = %d\nlr = 1e-3\ncheckpoint_every = 1000\nlog_every = 1\nthreads = 1", steps)}.Write(t, dir))
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
