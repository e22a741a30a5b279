// Package trainertest is the one harness of the tests that train: the tiny experiment (a 2-layer random BERT on
// a few hundred woz2 pairs, about 50 ms a step on one libtorch thread), running an experiment file as cmd/train
// does, and the checks on what a run leaves (its checkpoints, files equal byte for byte, finite weights). The
// trainer's own tests and each objective's end-to-end tests (objectives/<name>) use it.
package trainertest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

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

// FutureTOD writes a FutureTOD experiment on a tiny random BERT and 64 woz2 dialogues (eight batches of
// eight per epoch), with dropout on, and returns its path; output goes to dir/out. objective is more of the [objective] table's lines.
func FutureTOD(t *testing.T, dir string, objective string) string {
	t.Helper()
	tok, root := Data(t)
	body := fmt.Sprintf(`name = "tiny_futuretod"
output_dir = %q
seed = 11

[model]
tokenizer = %q
max_length = 48

[model.random]
arch = "bert"
layers = 2
hidden = 32
heads = 2
intermediate = 64
max_positions = 64
dropout = 0.2

[data]
root = %q
corpora = ["woz2"]
max_examples = 64

[objective]
name = "futuretod"
top_k_layers = 2
%s

[train]
batch_size = 8
epochs = 3
max_steps = 12
lr = 2e-3
checkpoint_every = 2
keep_checkpoints = 20
log_every = 1
threads = 1
`, filepath.Join(dir, "out"), tok, root, objective)
	return WriteExperiment(t, dir, body)
}

// DialogueCSE writes a tiny DialogueCSE experiment (a random 3-layer BERT, the bottom one frozen with the
// embeddings, woz2 dialogues) with its output in dir/out and returns the file's path.
func DialogueCSE(t *testing.T, dir, backbone string) string {
	t.Helper()
	tok, root := Data(t)
	model := fmt.Sprintf(`tokenizer = %q
max_length = 16

[model.random]
arch = "bert"
layers = 3
hidden = 32
heads = 2
intermediate = 64
max_positions = 64
dropout = 0.1`, tok)
	if backbone != "" {
		model = fmt.Sprintf("backbone = %q\nmax_length = 16", backbone)
	}
	body := fmt.Sprintf(`name = "tiny-dialoguecse"
output_dir = %q
seed = 11

[model]
%s

[data]
root = %q
corpora = ["woz2"]
merge_same_speaker = true
max_examples = 480

[objective]
name = "dialoguecse"
temperature = 0.1
aggregation = "attention"
negatives = 4
context_turns = 2
freeze_layers = 1

[train]
batch_size = 8
max_steps = 30
lr = 1e-3
head_lr = 1e-3
checkpoint_every = 3
log_every = 1
threads = 1
`, filepath.Join(dir, "out"), model, root)
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

// MetricLines reads a run's metrics.jsonl in out, each line as an M (trainer.Metric).
func MetricLines[M any](t *testing.T, out string) []M {
	t.Helper()
	b, err := os.ReadFile(rundir.At(out).MetricsPath())
	if err != nil {
		t.Fatal(err)
	}
	var ms []M
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		var m M
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s metrics.jsonl:%d: %v", out, line, err)
		}
		ms = append(ms, m)
	}
	return ms
}

// Line is a metrics line as an objective's tests read it: its step, loss and objective metrics, and Trajectory,
// every field that says something about training (all but the timings), to compare two runs with.
type Line struct {
	Step       int64              `json:"step"`
	Loss       float64            `json:"loss"`
	Objective  map[string]float64 `json:"objective"`
	Trajectory map[string]any     `json:"-"`
}

// timings are the metrics line's fields that differ between two runs of the same steps.
var timings = []string{"pairs_per_s", "step_s", "data_wait_s", "elapsed_s"}

// Lines reads a run's metrics.jsonl in out.
func Lines(t *testing.T, out string) []Line {
	t.Helper()
	raw := MetricLines[map[string]any](t, out)
	lines := MetricLines[Line](t, out)
	for i := range lines {
		for _, k := range timings {
			delete(raw[i], k)
		}
		lines[i].Trajectory = raw[i]
	}
	return lines
}

// StepsOf are the lines' steps, in order.
func StepsOf(lines []Line) []int64 {
	steps := make([]int64, len(lines))
	for i, l := range lines {
		steps[i] = l.Step
	}
	return steps
}

// CheckSteps wants a run's metrics lines to be at steps 1..n, each once and in order (log_every is 1).
func CheckSteps(t *testing.T, run string, steps []int64, n int64) {
	t.Helper()
	var got []string
	ok := len(steps) == int(n)
	for i, s := range steps {
		got = append(got, fmt.Sprint(s))
		ok = ok && s == int64(i+1)
	}
	if !ok {
		t.Errorf("%s's metrics.jsonl steps are %s, want 1..%d each once", run, strings.Join(got, ","), n)
	}
}

// Signed returns a checkpoint's metadata with the checksum of tensors, so that a test's checkpoint, made
// without some tensors, reaches the checks behind the checksum.
func Signed(t *testing.T, meta map[string]string, tensors []safetensors.Tensor) map[string]string {
	t.Helper()
	var m checkpoint.Meta
	if err := json.Unmarshal([]byte(meta["convrep"]), &m); err != nil {
		t.Fatal(err)
	}
	m.Checksum = checkpoint.Checksum(tensors)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"convrep": string(b)}
}

// BuildTrain builds cmd/train once for the test.
func BuildTrain(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "train")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/train")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/train: %v\n%s", err, out)
	}
	return bin
}

// Proc is one cmd/train process, its output going to a log file.
type Proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// Start runs bin (cmd/train) with args in dir, quietly, its output going to a log file in dir; the test's
// end kills it if it still runs.
func Start(t *testing.T, bin, dir string, args ...string) *Proc {
	t.Helper()
	log, err := os.CreateTemp(dir, "train-*.log")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{cmd: exec.Command(bin, append([]string{"--quiet"}, args...)...), log: log.Name(), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		log.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Output is what the process wrote so far.
func (p *Proc) Output(t *testing.T) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// MustSucceed waits up to two minutes for the process, which must exit 0.
func (p *Proc) MustSucceed(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v still running after two minutes:\n%s", p.cmd.Args, p.Output(t))
	}
	if p.err != nil {
		t.Fatalf("%v: %v\n%s", p.cmd.Args, p.err, p.Output(t))
	}
}

// KillAt waits until the run has checkpointed step `after` or later, waits a random part of a checkpoint
// interval more, and sends sig. SIGKILL must kill the run; SIGTERM must let it exit 0. Either way it must
// still have been training: a run that finished first proves nothing.
func KillAt(t *testing.T, p *Proc, out string, rng *rand.Rand, after int64, sig syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for Newest(t, out) < after {
		select {
		case <-p.done:
			t.Fatalf("%v ended (%v) before checkpoint %d:\n%s", p.cmd.Args, p.err, after, p.Output(t))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint %d after a minute:\n%s", after, p.Output(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond) // a checkpoint interval is about 3×50 ms
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	<-p.done
	var exit *exec.ExitError
	switch {
	case sig == syscall.SIGKILL:
		ws, ok := exitStatus(p.err, &exit)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("%v was not killed by SIGKILL (%v): it ended on its own\n%s", p.cmd.Args, p.err, p.Output(t))
		}
	case p.err != nil:
		t.Fatalf("%v after %v: %v, want exit status 0\n%s", p.cmd.Args, sig, p.err, p.Output(t))
	}
	if _, err := os.Stat(rundir.At(out).ModelDir()); err == nil {
		t.Fatalf("%v had already finished when %v came: the kill moment is too late\n%s", p.cmd.Args, sig, p.Output(t))
	}
}

func exitStatus(err error, exit **exec.ExitError) (syscall.WaitStatus, bool) {
	if !errors.As(err, exit) {
		return 0, false
	}
	ws, ok := (*exit).Sys().(syscall.WaitStatus)
	return ws, ok
}

// Newest is the step of the newest checkpoint under out, 0 if none.
func Newest(t *testing.T, out string) int64 {
	steps := CheckpointSteps(t, out)
	if len(steps) == 0 {
		return 0
	}
	return steps[len(steps)-1]
}

// KillAndResume trains one experiment twice, each in a folder of its own that write fills (write(dir) writes the
// experiment file, its output in dir/out, and returns its path): A uninterrupted, B SIGKILLed at a random
// checkpoint and resumed. Both must end in the same bytes, the final checkpoint (step steps) and the model, with
// one metrics line per step saying the same about training (log_every is 1, checkpoint_every 3).
func KillAndResume(t *testing.T, steps int64, write func(dir string) string) {
	t.Helper()
	bin := BuildTrain(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill moment drawn with seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{dirA, dirB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	expA, expB := write(dirA), write(dirB)
	outA, outB := filepath.Join(dirA, "out"), filepath.Join(dirB, "out")
	a := Start(t, bin, dirA, expA)
	b := Start(t, bin, dirB, expB)
	KillAt(t, b, outB, rng, int64(3*(1+rng.IntN(6))), syscall.SIGKILL)
	t.Logf("B killed after checkpoint %d", Newest(t, outB))
	b = Start(t, bin, dirB, "--resume", expB)
	b.MustSucceed(t)
	a.MustSucceed(t)

	runA, runB := rundir.At(outA), rundir.At(outB)
	SameFiles(t, runA.CheckpointPath(steps), runB.CheckpointPath(steps))
	SameFiles(t, filepath.Join(runA.ModelDir(), "model.safetensors"), filepath.Join(runB.ModelDir(), "model.safetensors"))
	la, lb := Lines(t, outA), Lines(t, outB)
	CheckSteps(t, "A", StepsOf(la), steps)
	CheckSteps(t, "B", StepsOf(lb), steps)
	for i := range min(len(la), len(lb)) {
		if !reflect.DeepEqual(la[i].Trajectory, lb[i].Trajectory) {
			t.Errorf("B's metrics at step %d differ from A's:\n%+v\n%+v", lb[i].Step, lb[i], la[i])
		}
	}
}

// moduleRoot is the folder of the go.mod above the working directory (a test runs in its package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// ResumeFolder makes a fresh output folder holding nothing but full's checkpoint of step, for a run that must
// resume from it, and returns the folder's path.
func ResumeFolder(t *testing.T, full string, step int64) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(rundir.At(out).CheckpointDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rundir.At(full).CheckpointPath(step))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rundir.At(out).CheckpointPath(step), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
