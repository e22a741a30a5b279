package traincmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"convrep/trainer"
)

// launch is where this node's workers stand in the job: the flags of torchrun's own launcher.
type launch struct {
	nprocPerNode, nnodes, nodeRank int
	masterAddr                     string
	masterPort                     int // 0: a free port (one node only)
	// gpus is what each local worker's CUDA_VISIBLE_DEVICES holds, its GPU alone (workerGPUs), for a job on
	// CUDA; nil leaves the workers the launcher's visibility (a CPU job).
	gpus []string
}

// workerGPUs gives each of n local workers one GPU: the i-th entry of the launcher's CUDA_VISIBLE_DEVICES
// (indices, UUIDs or MIG names, as CUDA reads them) when it is set, else GPU i. A worker that sees its GPU
// alone opens no CUDA context on the others, and NCCL finds one GPU per process.
func workerGPUs(n int, visible string, set bool) ([]string, error) {
	gpus := make([]string, n)
	if !set {
		for i := range gpus {
			gpus[i] = strconv.Itoa(i)
		}
		return gpus, nil
	}
	var listed []string
	for _, g := range strings.Split(visible, ",") {
		if g = strings.TrimSpace(g); g != "" {
			listed = append(listed, g)
		}
	}
	if len(listed) < n {
		return nil, fmt.Errorf("--nproc-per-node %d workers on CUDA, one GPU each, but CUDA_VISIBLE_DEVICES=%q names %d", n, visible, len(listed))
	}
	copy(gpus, listed)
	return gpus, nil
}

// launcherFlags are the flags that start workers rather than train; workers run without them.
var launcherFlags = map[string]bool{"nproc-per-node": true, "nnodes": true, "node-rank": true, "master-addr": true, "master-port": true}

// workerCommand is the command line of a worker: the executable, the words that select the train command in
// it (prefix: "train" under convrep, nothing for cmd/train), and args without the launcher's flags.
func workerCommand(exe string, prefix, args []string) []string {
	cmd := append([]string{exe}, prefix...)
	return append(cmd, workerArgs(args)...)
}

// workerArgs drops the launcher's flags (as -flag v, --flag v, -flag=v or --flag=v) from the command line.
func workerArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name := strings.TrimLeft(args[i], "-")
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if !strings.HasPrefix(args[i], "-") {
			out = append(out, args[i])
			continue
		}
		if n, _, hasValue := strings.Cut(name, "="); launcherFlags[n] {
			if !hasValue {
				i++ // the value follows
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// workerEnv is torchrun's environment contract for the worker of local rank i.
func (l launch) workerEnv(base []string, i, port int) []string {
	contract := map[string]string{
		"RANK":             strconv.Itoa(l.nodeRank*l.nprocPerNode + i),
		"WORLD_SIZE":       strconv.Itoa(l.nnodes * l.nprocPerNode),
		"LOCAL_RANK":       strconv.Itoa(i),
		"LOCAL_WORLD_SIZE": strconv.Itoa(l.nprocPerNode),
		"GROUP_RANK":       strconv.Itoa(l.nodeRank),
		"MASTER_ADDR":      l.masterAddr,
		"MASTER_PORT":      strconv.Itoa(port),
	}
	if l.gpus != nil {
		contract["CUDA_VISIBLE_DEVICES"] = l.gpus[i]
		contract[trainer.GPUPerWorkerEnv] = "1"
	}
	var env []string
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); contract[k] == "" {
			env = append(env, kv)
		}
	}
	for k, v := range contract {
		env = append(env, k+"="+v)
	}
	return env
}

func (l launch) check() error {
	switch {
	case l.nprocPerNode < 1:
		return fmt.Errorf("--nproc-per-node %d: at least one worker", l.nprocPerNode)
	case l.nnodes < 1:
		return fmt.Errorf("--nnodes %d: at least one node", l.nnodes)
	case l.nodeRank < 0 || l.nodeRank >= l.nnodes:
		return fmt.Errorf("--node-rank %d is not below --nnodes %d", l.nodeRank, l.nnodes)
	case l.nnodes > 1 && l.masterPort == 0:
		return fmt.Errorf("--master-port is required with several nodes (every node must name the same one)")
	case l.masterPort < 0 || l.masterPort > 65535:
		return fmt.Errorf("--master-port %d is not a TCP port", l.masterPort)
	case l.gpus != nil && len(l.gpus) != l.nprocPerNode:
		return fmt.Errorf("%d GPUs for %d workers", len(l.gpus), l.nprocPerNode)
	}
	return nil
}

// exited is how one worker ended.
type exited struct {
	rank int
	err  error
}

// jobError says which worker failed first, and how.
type jobError struct {
	index, rank, world int
	err                error
	tail               string // its last lines
	afterSignal        bool   // the launcher had already asked the workers to stop
}

func (e *jobError) Error() string {
	return fmt.Sprintf("worker %d (rank %d of %d) failed: %v; its last lines:\n%s", e.index, e.rank, e.world, e.err, e.tail)
}

// Port picking: when no --master-port is given, the launcher asks the kernel for a free port and rank 0's
// store binds it when it starts. Another program may take the port between the two; rank 0 then fails
// with EADDRINUSE, and the launcher starts the job again on another port, up to maxPortTries times. (The
// store's port cannot be handed over bound: libtorch 1.13's TCPStore takes a port number, not a socket.)
const maxPortTries = 3

// pickPort finds a free port; a test replaces it.
var pickPort = freePort

// workerWaitDelay bounds how long the launcher waits for a worker's output after the worker exited: a
// process the worker started and left running may hold its stderr open for ever.
var workerWaitDelay = 10 * time.Second

// runWorkers starts this node's workers (argv, with the environment contract), forwards SIGINT and SIGTERM to
// them, and returns once all have ended: nil when every one exited 0. When one fails, the others are ended
// (SIGTERM, then SIGKILL after grace) and the error names it and holds its last log lines; the job never
// waits on a worker that can no longer be answered. A job that failed only because the port the launcher
// picked was taken before rank 0 bound it is started again on another.
func (l launch) runWorkers(argv []string, grace time.Duration, log *zap.Logger) error {
	if err := l.check(); err != nil {
		return err
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	for attempt := 1; ; attempt++ {
		port := l.masterPort
		if port == 0 {
			p, err := pickPort(l.masterAddr)
			if err != nil {
				return err
			}
			port = p
		}
		err := l.runJob(argv, port, grace, signals, log)
		if l.masterPort != 0 || attempt == maxPortTries || !portTaken(err) {
			return err
		}
		log.Warn("the rendezvous port was taken before rank 0 could bind it; starting the workers again on another",
			zap.Int("port", port), zap.Int("attempt", attempt))
	}
}

// portTaken reports whether the job failed because rank 0, which serves the rendezvous store, found its
// port in use.
func portTaken(err error) bool {
	var je *jobError
	return errors.As(err, &je) && je.rank == 0 && !je.afterSignal &&
		strings.Contains(strings.ToLower(je.tail), "address already in use")
}

// runJob runs the workers once with the rendezvous at port.
func (l launch) runJob(argv []string, port int, grace time.Duration, signals <-chan os.Signal, log *zap.Logger) error {
	workers := make([]*exec.Cmd, l.nprocPerNode)
	tails := make([]*tail, l.nprocPerNode)
	done := make(chan exited, l.nprocPerNode)
	for i := range workers {
		rank := l.nodeRank*l.nprocPerNode + i
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = l.workerEnv(os.Environ(), i, port)
		// Workers get signals from the launcher only, so that one Ctrl-C reaches each of them once.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.WaitDelay = workerWaitDelay
		tails[i] = newTail(20)
		// Rank 0's progress bar redraws in place: its bytes pass through as they come. The others' lines
		// carry their rank.
		var out io.Writer = os.Stderr
		if rank != 0 {
			out = &prefixed{w: os.Stderr, prefix: fmt.Sprintf("[rank %d] ", rank)}
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, io.MultiWriter(out, tails[i])
		if err := cmd.Start(); err != nil {
			l.end(workers[:i], syscall.SIGKILL)
			return fmt.Errorf("start worker %d: %w", rank, err)
		}
		workers[i] = cmd
		// Wait returns once the worker's output is copied (or workerWaitDelay after it exited), so its last
		// lines are in its tail.
		go func() { done <- exited{rank, waitWorker(cmd, rank, log)} }()
	}
	log.Info("workers started", zap.Int("node_workers", l.nprocPerNode), zap.Int("world_size", l.nnodes*l.nprocPerNode),
		zap.String("master", fmt.Sprintf("%s:%d", l.masterAddr, port)))

	var failed *jobError
	var killAt <-chan time.Time
	signalled := false
	for left := len(workers); left > 0; {
		select {
		case s := <-signals:
			if signalled { // a second signal: no more waiting
				l.end(workers, syscall.SIGKILL)
				continue
			}
			signalled = true
			log.Info("forwarding signal to the workers", zap.String("signal", s.String()))
			l.end(workers, s.(syscall.Signal))
			killAt = time.After(stopGrace)
		case <-killAt:
			l.end(workers, syscall.SIGKILL)
		case e := <-done:
			left--
			if e.err != nil && failed == nil {
				i := e.rank - l.nodeRank*l.nprocPerNode
				failed = &jobError{index: i, rank: e.rank, world: l.nnodes * l.nprocPerNode, err: e.err, afterSignal: signalled}
				l.end(workers, syscall.SIGTERM)
				killAt = time.After(grace)
			}
		}
	}
	if failed != nil {
		failed.tail = tails[failed.index].String()
		return failed
	}
	return nil
}

// waitWorker waits for the worker to end. A worker that exited 0 but left a process holding its output
// open succeeded: after workerWaitDelay its output is closed and a warning says so.
func waitWorker(cmd *exec.Cmd, rank int, log *zap.Logger) error {
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		log.Warn("worker exited, but a process it started still held its output; stopped reading it",
			zap.Int("rank", rank), zap.Duration("after", workerWaitDelay))
		return nil
	}
	return err
}

// end sends sig to every worker still running.
func (l launch) end(workers []*exec.Cmd, sig syscall.Signal) {
	for _, w := range workers {
		if w != nil && w.Process != nil {
			_ = w.Process.Signal(sig) // fails only for a worker that has already exited
		}
	}
}

// stopGrace is how long workers asked to stop may take to finish their step and checkpoint.
const stopGrace = 2 * time.Minute

// prefixed writes whole lines to w, each after prefix.
type prefixed struct {
	w       io.Writer
	prefix  string
	partial []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s", p.prefix, p.partial[:i+1]); err != nil {
			return len(b), err
		}
		p.partial = p.partial[i+1:]
	}
}

// tail keeps the last n lines written to it. A progress bar redraws with carriage returns: of such a line
// it keeps what was shown last.
type tail struct {
	mu      sync.Mutex
	n       int
	lines   []string
	partial string
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := t.partial + string(p)
	parts := strings.Split(text, "\n")
	t.partial = parts[len(parts)-1]
	for _, line := range parts[:len(parts)-1] {
		t.keep(line)
	}
	return len(p), nil
}

func (t *tail) keep(line string) {
	line = strings.TrimRight(line, "\r")
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if t.partial != "" {
		lines = append(lines[:len(lines):len(lines)], t.partial)
	}
	if len(lines) == 0 {
		return "  (no output)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

// freePort asks the kernel for a port no one listens on at addr.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
