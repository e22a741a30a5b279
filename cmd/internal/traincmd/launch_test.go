package traincmd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"convrep/trainer"
)

func TestWorkerArgsDropTheLauncherFlags(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"--nproc-per-node 2 exp.toml", "exp.toml"},
		{"--nproc-per-node=2 --resume exp.toml", "--resume exp.toml"},
		{"-nnodes 2 -node-rank=1 --master-addr h --master-port 29500 --set train.lr=1 exp.toml", "--set train.lr=1 exp.toml"},
		{"--quiet --set a=b --nproc-per-node 4 exp.toml", "--quiet --set a=b exp.toml"},
		{"--resume -- --nproc-per-node", "--resume -- --nproc-per-node"},
		{"exp.toml --nproc-per-node 2 --set train.lr=1e-5 --resume", "exp.toml --set train.lr=1e-5 --resume"},
	} {
		if got := strings.Join(workerArgs(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("workerArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Under convrep the workers are started as "convrep train ...", with the subcommand; under cmd/train as "train ...".
func TestWorkersRunTheTrainCommand(t *testing.T) {
	args := []string{"--nproc-per-node", "2", "--quiet", "exp.toml", "--set", "train.lr=1"}
	for _, prefix := range [][]string{nil, {"train"}} {
		t.Setenv("CONVREP_FAKE_WORKER", "argv")
		record := filepath.Join(t.TempDir(), "argv")
		t.Setenv("CONVREP_FAKE_ARGV", record)
		l := launch{nprocPerNode: 2, nnodes: 1, masterAddr: "127.0.0.1"}
		if err := l.runWorkers(workerCommand(os.Args[0], prefix, args), time.Second, zaptest.NewLogger(t)); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(strings.Join(prefix, " ") + " --quiet exp.toml --set train.lr=1")
		for rank := 0; rank < 2; rank++ {
			got, err := os.ReadFile(record + "." + strconv.Itoa(rank))
			if err != nil || string(got) != want {
				t.Errorf("prefix %q: worker %d ran with %q (%v), want %q", prefix, rank, got, err, want)
			}
		}
	}
}

func TestWorkerEnvFollowsTorchrun(t *testing.T) {
	l := launch{nprocPerNode: 4, nnodes: 2, nodeRank: 1, masterAddr: "node0"}
	env := map[string]string{}
	for _, kv := range l.workerEnv([]string{"RANK=9", "HOME=/h"}, 3, 29501) {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Fatalf("%s set twice", k)
		}
		env[k] = v
	}
	want := map[string]string{"RANK": "7", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
		"MASTER_ADDR": "node0", "MASTER_PORT": "29501", "HOME": "/h"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
}

// A CUDA job gives each worker its GPU alone: CUDA_VISIBLE_DEVICES is the worker's entry of the launcher's
// (or its local rank), and the worker is told so; a CPU job leaves the visibility alone.
func TestWorkerEnvGivesEachWorkerItsGPU(t *testing.T) {
	for _, c := range []struct {
		name    string
		gpus    []string
		base    []string
		i       int
		want    string // CUDA_VISIBLE_DEVICES
		wantOwn string // trainer.GPUPerWorkerEnv
	}{
		{"cuda", []string{"0", "1", "2"}, nil, 2, "2", "1"},
		{"cuda, the user's list", []string{"5", "GPU-ab"}, []string{"CUDA_VISIBLE_DEVICES=5,GPU-ab"}, 1, "GPU-ab", "1"},
		{"cpu", nil, []string{"CUDA_VISIBLE_DEVICES=3,4"}, 1, "3,4", ""},
		{"cpu, nothing set", nil, nil, 1, "", ""},
	} {
		l := launch{nprocPerNode: 3, nnodes: 1, masterAddr: "127.0.0.1", gpus: c.gpus}
		env := map[string]string{}
		for _, kv := range l.workerEnv(c.base, c.i, 29500) {
			k, v, _ := strings.Cut(kv, "=")
			if _, dup := env[k]; dup {
				t.Fatalf("%s: %s set twice", c.name, k)
			}
			env[k] = v
		}
		if env["CUDA_VISIBLE_DEVICES"] != c.want || env[trainer.GPUPerWorkerEnv] != c.wantOwn {
			t.Errorf("%s: worker %d has CUDA_VISIBLE_DEVICES=%q %s=%q, want %q and %q", c.name, c.i,
				env["CUDA_VISIBLE_DEVICES"], trainer.GPUPerWorkerEnv, env[trainer.GPUPerWorkerEnv], c.want, c.wantOwn)
		}
	}
}

// workerGPUs takes the i-th entry of the user's CUDA_VISIBLE_DEVICES, or GPU i when it is unset, and refuses
// more workers than listed GPUs.
func TestWorkerGPUs(t *testing.T) {
	for _, c := range []struct {
		n       int
		visible string
		set     bool
		want    []string
		err     string
	}{
		{3, "", false, []string{"0", "1", "2"}, ""},
		{2, "3,1,7", true, []string{"3", "1"}, ""},
		{2, " GPU-a , MIG-b ", true, []string{"GPU-a", "MIG-b"}, ""},
		{3, "2,5", true, nil, `CUDA_VISIBLE_DEVICES="2,5" names 2`},
		{1, "", true, nil, "names 0"},
	} {
		got, err := workerGPUs(c.n, c.visible, c.set)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%d workers, %q (set %v): error %v, want one saying %q", c.n, c.visible, c.set, err, c.err)
		case c.err == "" && (err != nil || strings.Join(got, "|") != strings.Join(c.want, "|")):
			t.Errorf("%d workers, %q (set %v): %q, %v; want %q", c.n, c.visible, c.set, got, err, c.want)
		}
	}
}

func TestLaunchRefusesBadLayouts(t *testing.T) {
	for _, l := range []launch{
		{nprocPerNode: 0, nnodes: 1},
		{nprocPerNode: 2, nnodes: 0},
		{nprocPerNode: 2, nnodes: 2, nodeRank: 2, masterPort: 29500},
		{nprocPerNode: 2, nnodes: 2, nodeRank: 1},
		{nprocPerNode: 2, nnodes: 1, masterPort: 70000},
		{nprocPerNode: 2, nnodes: 1, gpus: []string{"0"}},
	} {
		if err := l.check(); err == nil {
			t.Errorf("%+v was accepted", l)
		}
	}
}

// fakeWorker stands in for cmd/train in the launcher's tests: started again as this test binary, it
// behaves as CONVREP_FAKE_WORKER says.
func TestMain(m *testing.M) {
	switch os.Getenv("CONVREP_FAKE_WORKER") {
	case "":
		os.Exit(m.Run())
	case "train": // cmd/train itself, on the arguments after --
		os.Exit(Main(nil, strings.Fields(os.Getenv("CONVREP_TRAIN_ARGS"))))
	case "argv": // writes its command line after the executable to $CONVREP_FAKE_ARGV.RANK
		os.WriteFile(os.Getenv("CONVREP_FAKE_ARGV")+"."+os.Getenv("RANK"), []byte(strings.Join(os.Args[1:], " ")), 0o644)
		os.Exit(0)
	case "ok":
		fmt.Fprintf(os.Stderr, "worker %s of %s done\n", os.Getenv("RANK"), os.Getenv("WORLD_SIZE"))
		os.Exit(0)
	case "port": // rank 0 binds the rendezvous port, as the store would
		if os.Getenv("RANK") == "0" {
			l, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT")))
			if err != nil {
				fmt.Fprintln(os.Stderr, "store:", err)
				os.Exit(1)
			}
			l.Close()
		}
		os.Exit(0)
	case "grandchild": // leaves a process holding its stderr, and exits 0
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "CONVREP_FAKE_WORKER=sleeper")
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		os.WriteFile(os.Getenv("CONVREP_FAKE_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
		os.Exit(0)
	case "sleeper":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "killed":
		if os.Getenv("RANK") == "1" {
			time.Sleep(200 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "rank 1: the last words before SIGKILL")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		// The others wait as a worker blocked in a collective would, and never end by themselves.
		time.Sleep(time.Hour)
	}
}

func TestLauncherEndsTheJobWhenAWorkerIsKilled(t *testing.T) {
	t.Setenv("CONVREP_FAKE_WORKER", "killed")
	l := launch{nprocPerNode: 3, nnodes: 1, masterAddr: "127.0.0.1"}
	start := time.Now()
	err := l.runWorkers([]string{os.Args[0]}, time.Second, zaptest.NewLogger(t))
	took := time.Since(start)
	if err == nil {
		t.Fatal("the job succeeded although a worker was killed")
	}
	for _, want := range []string{"rank 1 of 3", "signal: killed", "the last words before SIGKILL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took > 30*time.Second {
		t.Errorf("the job took %s to end", took)
	}
	t.Logf("ended in %s: %v", took.Round(time.Millisecond), err)
}

func TestLauncherSucceedsWhenEveryWorkerDoes(t *testing.T) {
	t.Setenv("CONVREP_FAKE_WORKER", "ok")
	l := launch{nprocPerNode: 2, nnodes: 1, masterAddr: "127.0.0.1"}
	if err := l.runWorkers([]string{os.Args[0]}, time.Second, zaptest.NewLogger(t)); err != nil {
		t.Fatal(err)
	}
}

func TestPrefixedWritesWholeLines(t *testing.T) {
	var b strings.Builder
	p := &prefixed{w: &b, prefix: "[rank 1] "}
	for _, chunk := range []string{"a", "b\nc", "\n", "d"} {
		p.Write([]byte(chunk))
	}
	if got, want := b.String(), "[rank 1] ab\n[rank 1] c\n"; got != want {
		t.Fatalf("got %q, want %q (d waits for its newline)", got, want)
	}
	tl := newTail(2)
	tl.Write([]byte("one\ntwo\rtwo again\nthree\npart"))
	if got, want := tl.String(), "  two again\n  three\n  part"; got != want {
		t.Fatalf("tail %q, want %q", got, want)
	}
}

// A worker that exits 0 but leaves a process holding its stderr must not keep the launcher waiting.
func TestLauncherDoesNotWaitForAWorkersGrandchild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("CONVREP_FAKE_WORKER", "grandchild")
	t.Setenv("CONVREP_FAKE_PIDFILE", pidFile)
	saved := workerWaitDelay
	workerWaitDelay = 200 * time.Millisecond
	t.Cleanup(func() { workerWaitDelay = saved })
	t.Cleanup(func() { // end the sleeper this test started, by its pid
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	l := launch{nprocPerNode: 1, nnodes: 1, masterAddr: "127.0.0.1"}
	start := time.Now()
	if err := l.runWorkers([]string{os.Args[0]}, time.Second, zaptest.NewLogger(t)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the launcher waited %v for a grandchild's output (it sleeps a minute)", took)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Errorf("the worker started no grandchild: %v", err)
	}
}

// A port the launcher picked and someone took before rank 0 bound it is replaced by another; a port the
// user gave is not, and neither is one taken at every try.
func TestLauncherRetriesATakenRendezvousPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().(*net.TCPAddr).Port
	t.Setenv("CONVREP_FAKE_WORKER", "port")
	for _, tc := range []struct {
		name      string
		given     int   // --master-port; 0 lets the launcher pick
		picks     []int // what pickPort returns in turn; 0 is a free port
		wantPicks int
		wantErr   string
	}{
		{name: "taken once", picks: []int{busy, 0}, wantPicks: 2},
		{name: "free at once", picks: []int{0}, wantPicks: 1},
		{name: "taken at every try", picks: []int{busy, busy, busy, busy}, wantPicks: maxPortTries, wantErr: "address already in use"},
		{name: "given by the user", given: busy, wantPicks: 0, wantErr: "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			picked := 0
			saved := pickPort
			pickPort = func(addr string) (int, error) {
				p := tc.picks[picked]
				picked++
				if p == 0 {
					return freePort(addr)
				}
				return p, nil
			}
			t.Cleanup(func() { pickPort = saved })
			l := launch{nprocPerNode: 2, nnodes: 1, masterAddr: "127.0.0.1", masterPort: tc.given}
			err := l.runWorkers([]string{os.Args[0]}, time.Second, zaptest.NewLogger(t))
			if picked != tc.wantPicks {
				t.Errorf("picked %d ports, want %d", picked, tc.wantPicks)
			}
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "rank 0 of 2")) {
				t.Fatalf("error %v, want rank 0's %q", err, tc.wantErr)
			}
		})
	}
}
