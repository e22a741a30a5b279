package torch

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The collectives run between real processes: the test starts this test binary twice more as ranks 0 and 1
// (TestDistWorker, selected by the environment), and each rank checks what it received.
func TestGlooCollectivesBetweenTwoProcesses(t *testing.T) {
	if !HasBackend("gloo") {
		t.Fatal("this build has no Gloo backend; cmd/setup compiles it where libgloo-dev's headers are installed")
	}
	port := freePort(t)
	var procs []*exec.Cmd
	for rank := 0; rank < 2; rank++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDistWorker$", "-test.v")
		cmd.Env = append(os.Environ(), "CONVREP_DIST_TEST_RANK="+strconv.Itoa(rank), "CONVREP_DIST_TEST_PORT="+strconv.Itoa(port))
		out, err := os.CreateTemp(t.TempDir(), "rank")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() { cmd.Process.Kill() })
	}
	for rank, cmd := range procs {
		err := cmd.Wait()
		log, _ := os.ReadFile(cmd.Stdout.(*os.File).Name())
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", rank, err, log)
		}
	}
}

func TestDistWorker(t *testing.T) {
	rankEnv := os.Getenv("CONVREP_DIST_TEST_RANK")
	if rankEnv == "" {
		t.Skip("a worker of TestGlooCollectivesBetweenTwoProcesses; runs only when that test starts it")
	}
	rank, _ := strconv.Atoi(rankEnv)
	port, _ := strconv.Atoi(os.Getenv("CONVREP_DIST_TEST_PORT"))
	g, err := NewGroup("gloo", "127.0.0.1", port, rank, 2, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := float64(rank)

	// Mean over the ranks, in buckets small enough that the float32 tensors take two of them; the float64
	// tensor goes in a bucket of its own.
	a := ts.MustOfSlice([]float32{1 + float32(r), 2, 3}).MustView([]int64{3, 1}, true)
	b := ts.MustOfSlice([]float32{10 * float32(r), 5})
	c := ts.MustOfSlice([]float64{float64(4 * rank), 8})
	if err := g.AllReduceMean([]*ts.Tensor{a, b, c}, 16); err != nil {
		t.Fatal(err)
	}
	expect(t, "mean a", a.Float64Values(), []float64{1.5, 2, 3})
	expect(t, "mean b", b.Float64Values(), []float64{5, 5})
	expect(t, "mean c", c.Float64Values(), []float64{2, 8})
	if sz := a.MustSize(); sz[0] != 3 || sz[1] != 1 {
		t.Fatalf("all-reduce changed the shape to %v", sz)
	}
	// Refused before any message is sent, on every rank alike, so the group stays in step.
	if err := g.AllReduceMean([]*ts.Tensor{ts.MustOfSlice([]int64{1})}, 16); err == nil {
		t.Fatal("the mean of an int64 tensor was accepted")
	}

	m := ts.MustOfSlice([]float64{r, 5 - r})
	if err := g.AllReduce(m, Max); err != nil {
		t.Fatal(err)
	}
	expect(t, "max", m.Float64Values(), []float64{1, 5})

	x := ts.MustOfSlice([]float32{float32(r) + 7, float32(r) * 3})
	if err := g.Broadcast([]*ts.Tensor{x}, 1); err != nil {
		t.Fatal(err)
	}
	expect(t, "broadcast from rank 1", x.Float64Values(), []float64{8, 3})

	rows := ts.MustOnes([]int64{2, 3}, gotch.Float, gotch.CPU).MustMulScalar(ts.FloatScalar(r+1), true)
	all, err := g.AllGather(rows)
	if err != nil {
		t.Fatal(err)
	}
	if sz := all.MustSize(); sz[0] != 4 || sz[1] != 3 {
		t.Fatalf("all-gather shape %v, want [4 3]", sz)
	}
	expect(t, "all-gather", all.Float64Values(), []float64{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2})
	if err := g.Barrier(); err != nil {
		t.Fatal(err)
	}
}

func TestNewGroupRefusesBadRanks(t *testing.T) {
	for _, c := range []struct{ rank, world, port int }{{2, 2, 1234}, {-1, 2, 1234}, {0, 0, 1234}, {0, 2, 70000}} {
		if _, err := NewGroup("gloo", "127.0.0.1", c.port, c.rank, c.world, time.Second); err == nil {
			t.Errorf("rank %d of %d on port %d was accepted", c.rank, c.world, c.port)
		}
	}
	if _, err := NewGroup("mpi", "127.0.0.1", freePort(t), 0, 1, time.Second); err == nil {
		t.Error("an unknown backend was accepted")
	}
}

func expect(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// freePort asks the kernel for a port no one listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
