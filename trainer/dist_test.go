package trainer_test

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// The data-parallel tests start this test binary again as the workers (TestDistWorkerMain, selected by the
// environment torchrun would set), train the tiny DSE experiment with dropout off and global negatives, and
// compare with one process holding the whole batch: the loss of every step and the final weights.

// equalRunSettings turns dropout off, the only randomness whose stream differs between one process and several,
// and takes DSE's own rates (Appendix A.2: 3e-6 for the encoder, 3e-4 for the head). The tiny experiment's
// 1e-3 moves one word-embedding weight 2.2e-5 apart in 20 steps (measured): Adam divides by the root of the
// second moment, so a gradient near zero, whose last bits differ between one 16-row product and two 8-row
// products summed, still moves its weight by a sizeable part of the rate.
var equalRunSettings = []string{"model.random.dropout=0.0", "train.max_steps=20", "train.checkpoint_every=10", "train.lr=3e-6", "train.head_lr=3e-4"}

func TestTwoGlooWorkersFollowOneProcess(t *testing.T) {
	for _, c := range []struct {
		objective string
		sets      []string
	}{
		{"dse", nil},
		// Two micro-batches of 8 per step: the ranks average only after the second backward pass.
		{"dse_accumulated", []string{"train.batch_size=8", "train.grad_accumulation=2"}},
		// SimCSE's MLP at the paper's rate (3e-5; DSE's head rate moves it 9e-6 apart in 20 steps).
		{"simcse", []string{"objective.name=simcse", "data.pairs=dropout", "train.head_lr=3e-5"}},
		// Without its MLM term: each rank's MLM loss is a mean over its own masked tokens, whose number
		// differs between the ranks, so the mean of the ranks' means is not the global mean (as in DDP).
		// Ten steps: RCL's encoder LayerNorm biases get gradients near zero whose last bits differ between one
		// 16-row and two 8-row products, and Adam turns each into a step of the full rate; with the query, key
		// and value projections in one GEMM, 20 steps put one bias 1.007e-5 apart (5.3e-6 with three GEMMs).
		{"rcl", []string{"objective.name=rcl", "objective.mlm_weight=0", "train.max_steps=10"}},
	} {
		t.Run(c.objective, func(t *testing.T) {
			sets := append(append([]string{}, equalRunSettings...), c.sets...)
			steps := 20
			if c.objective == "rcl" {
				steps = 10
			}
			single := trainertest.Experiment(t, t.TempDir(), "")
			if err := trainertest.Run(t, single, sets, false); err != nil {
				t.Fatal(err)
			}
			pair := trainertest.Experiment(t, t.TempDir(), "")
			runWorkers(t, 2, pair, sets, false)
			sameLosses(t, outOf(single), outOf(pair), steps)
			sameParams(t, rundir.At(outOf(single)).CheckpointPath(int64(steps)), rundir.At(outOf(pair)).CheckpointPath(int64(steps)))
		})
	}
}

// A run stopped after 10 steps on two workers continues in one process where it stopped: the global batch
// sequence does not depend on the number of ranks, so the run ends where the uninterrupted one does.
func TestResumeOnAnotherNumberOfRanks(t *testing.T) {
	single := trainertest.Experiment(t, t.TempDir(), "")
	if err := trainertest.Run(t, single, equalRunSettings, false); err != nil {
		t.Fatal(err)
	}
	moved := trainertest.Experiment(t, t.TempDir(), "")
	first := append(append([]string{}, equalRunSettings...), "train.max_steps=10")
	runWorkers(t, 2, moved, first, false)
	if err := trainertest.Run(t, moved, equalRunSettings, true); err != nil {
		t.Fatal(err)
	}
	sameLosses(t, outOf(single), outOf(moved), 20)
	sameParams(t, rundir.At(outOf(single)).CheckpointPath(20), rundir.At(outOf(moved)).CheckpointPath(20))
}

// With local_negatives each rank contrasts its own rows only: the loss is that of a batch half as large,
// not the one-process loss.
func TestLocalNegativesStayOnTheirRank(t *testing.T) {
	sets := []string{"model.random.dropout=0.0", "train.max_steps=2", "train.checkpoint_every=10"}
	single := trainertest.Experiment(t, t.TempDir(), "")
	if err := trainertest.Run(t, single, sets, false); err != nil {
		t.Fatal(err)
	}
	local := trainertest.Experiment(t, t.TempDir(), "")
	runWorkers(t, 2, local, append(sets, "distributed.local_negatives=true"), false)
	a, err1 := trainer.ReadMetrics(filepath.Join(outOf(single), "metrics.jsonl"))
	b, err2 := trainer.ReadMetrics(filepath.Join(outOf(local), "metrics.jsonl"))
	if err1 != nil || err2 != nil || len(a) == 0 || len(b) == 0 {
		t.Fatalf("metrics: %v %v (%d and %d lines)", err1, err2, len(a), len(b))
	}
	// An anchor's loss grows with its number of negatives (about log(2B−1) at chance): 15 instead of 31.
	if math.Abs(a[0].Loss-b[0].Loss) < 0.1 {
		t.Fatalf("first loss %.4f with global negatives, %.4f with local ones: the switch changed nothing", a[0].Loss, b[0].Loss)
	}
}

func TestDistWorkerMain(t *testing.T) {
	path := os.Getenv("CONVREP_TEST_WORKER_EXPERIMENT")
	if path == "" {
		t.Skip("a worker of the data-parallel tests; runs only when they start it")
	}
	sets := strings.Split(os.Getenv("CONVREP_TEST_WORKER_SETS"), ";")
	resume := os.Getenv("CONVREP_TEST_WORKER_RESUME") == "1"
	if dir := os.Getenv("CONVREP_TEST_WORKER_MASKS"); dir != "" {
		drawMask(t, path, sets, resume, dir)
		return
	}
	if err := trainertest.Run(t, path, sets, resume); err != nil {
		t.Fatal(err)
	}
}

// runWorkers trains the experiment on n worker processes of this test binary and waits for them.
func runWorkers(t *testing.T, n int, path string, sets []string, resume bool, env ...string) {
	t.Helper()
	waitWorkers(t, startWorkers(t, n, path, sets, resume, env...))
}

// workers are the processes startWorkers started, and their logs.
type workers struct {
	cmds []*exec.Cmd
	logs []string
}

// startWorkers starts n worker processes of this test binary on the experiment, with env added to theirs.
func startWorkers(t *testing.T, n int, path string, sets []string, resume bool, env ...string) *workers {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var cmds []*exec.Cmd
	var logs []string
	for r := 0; r < n; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDistWorkerMain$")
		resumeFlag := "0"
		if resume {
			resumeFlag = "1"
		}
		cmd.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), "CONVREP_TEST_WORKER_EXPERIMENT="+path,
			"CONVREP_TEST_WORKER_SETS="+strings.Join(sets, ";"), "CONVREP_TEST_WORKER_RESUME="+resumeFlag)
		cmd.Env = append(cmd.Env, env...)
		log := filepath.Join(t.TempDir(), fmt.Sprintf("rank%d.log", r))
		f, err := os.Create(log)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		cmds, logs = append(cmds, cmd), append(logs, log)
	}
	return &workers{cmds: cmds, logs: logs}
}

// waitWorkers waits for every worker and fails the test if one failed, showing every worker's log: the
// worker that reports an error is often not the one that caused it (a rank that dies closes its peers'
// connections).
func waitWorkers(t *testing.T, w *workers) {
	t.Helper()
	var failed []string
	for r, cmd := range w.cmds {
		if err := cmd.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("worker %d: %v", r, err))
		}
	}
	if failed != nil {
		t.Fatalf("%s\n%s", strings.Join(failed, "; "), workerLogs(w))
	}
}

func outOf(experiment string) string { return filepath.Join(filepath.Dir(experiment), "out") }

// sameLosses wants the losses of two runs' first steps within 1e-5, and their gradient norms within a
// relative 1e-3: Adam's step hardly depends on the gradients' scale, so the weights alone would not show a
// gradient that the ranks summed instead of averaging. (SimCSE's and RCL's norms, about 1e-3, differ in
// their fourth digit: rounding in sums that nearly cancel.)
func sameLosses(t *testing.T, a, b string, steps int) {
	t.Helper()
	ma, err := trainer.ReadMetrics(filepath.Join(a, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	mb, err := trainer.ReadMetrics(filepath.Join(b, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ma) != steps || len(mb) != steps {
		t.Fatalf("%d and %d metrics lines, want %d each", len(ma), len(mb), steps)
	}
	for i := range ma {
		if ma[i].Step != mb[i].Step || math.Abs(ma[i].Loss-mb[i].Loss) > 1e-5 {
			t.Errorf("step %d: loss %.8f in one process, %.8f with two ranks (step %d)", ma[i].Step, ma[i].Loss, mb[i].Loss, mb[i].Step)
		}
		if math.Abs(ma[i].GradNorm-mb[i].GradNorm) > 1e-3*ma[i].GradNorm {
			t.Errorf("step %d: gradient norm %.8g in one process, %.8g with two ranks", ma[i].Step, ma[i].GradNorm, mb[i].GradNorm)
		}
	}
}

// sameParams wants every param/ tensor of two checkpoints within 1e-5 (the contrastive head included).
func sameParams(t *testing.T, a, b string) {
	t.Helper()
	fa, err := safetensors.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := safetensors.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]safetensors.Tensor{}
	for _, x := range fb.Tensors {
		other[x.Name] = x
	}
	compared, worst, worstAt := 0, 0.0, ""
	for _, x := range fa.Tensors {
		if !strings.HasPrefix(x.Name, checkpoint.ParamPrefix) {
			continue
		}
		va, err1 := x.Float32s()
		vb, err2 := other[x.Name].Float32s()
		if err1 != nil || err2 != nil || len(va) != len(vb) {
			t.Fatalf("%s: %v %v (%d vs %d values)", x.Name, err1, err2, len(va), len(vb))
		}
		for i := range va {
			if d := math.Abs(float64(va[i] - vb[i])); d > worst {
				worst, worstAt = d, fmt.Sprintf("%s[%d] (%g vs %g)", x.Name, i, va[i], vb[i])
			}
		}
		compared++
	}
	if compared == 0 {
		t.Fatalf("%s holds no parameters", a)
	}
	if worst > 1e-5 {
		t.Errorf("final weights differ by up to %g over %d tensors (want ≤ 1e-5), at %s", worst, compared, worstAt)
	}
	t.Logf("%d tensors, largest difference %g at %s", compared, worst, worstAt)
}

// The global batch must split evenly: the error comes before any rendezvous, naming the file.
func TestGlobalBatchMustDivideOverTheRanks(t *testing.T) {
	path := trainertest.Experiment(t, t.TempDir(), "")
	e, err := experiment.Load(path, []string{"train.batch_size=10"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WORLD_SIZE", "4")
	t.Setenv("RANK", "0")
	_, err = trainer.JoinCluster(e, gotch.CPU)
	if err == nil || !strings.Contains(err.Error(), "batch_size 10") || !strings.Contains(err.Error(), path) {
		t.Fatalf("batch 10 over 4 ranks: %v", err)
	}
}

// NCCL with a CPU model fails at once, naming the experiment file, before any rendezvous would wait.
func TestNCCLWithACPUModelIsRefused(t *testing.T) {
	path := trainertest.Experiment(t, t.TempDir(), "")
	e, err := experiment.Load(path, []string{"distributed.backend=nccl"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WORLD_SIZE", "2")
	t.Setenv("RANK", "0")
	t.Setenv("LOCAL_RANK", "0")
	_, err = trainer.JoinCluster(e, gotch.CPU)
	if err == nil || !strings.Contains(err.Error(), `needs model.device = "cuda"`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("NCCL on the CPU: %v", err)
	}
}
