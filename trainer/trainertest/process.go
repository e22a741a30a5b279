package trainertest

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"convrep/rundir"
)

// The tests that run cmd/train as a process: building it, starting it, killing it at a checkpoint and
// resuming it.

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
