package torch

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The collectives run between real processes: the test starts this test binary twice more as ranks 0 and 1
// (TestDistWorker, selected by the environment), and each rank checks what it received.
func TestGlooCollectivesBetweenTwoProcesses(t *testing.T) { twoRanks(t, "all") }

// TestOverlapBucketViewsBetweenTwoProcesses runs the overlapped gradient averaging alone.
func TestOverlapBucketViewsBetweenTwoProcesses(t *testing.T) { twoRanks(t, "overlap") }

// TestOverlapWhereOneRankHasNoGradient averages a parameter that only rank 0's graph reaches.
func TestOverlapWhereOneRankHasNoGradient(t *testing.T) { twoRanks(t, "partial") }

// twoRanks runs TestDistWorker as ranks 0 and 1; mode "overlap" checks the overlapped averaging alone.
func twoRanks(t *testing.T, mode string) {
	if !HasBackend("gloo") {
		t.Fatal("this build has no Gloo backend; cmd/setup compiles it where libgloo-dev's headers are installed")
	}
	port := freePort(t)
	var procs []*exec.Cmd
	for rank := 0; rank < 2; rank++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDistWorker$", "-test.v")
		cmd.Env = append(os.Environ(), "CONVREP_DIST_TEST_RANK="+strconv.Itoa(rank), "CONVREP_DIST_TEST_PORT="+strconv.Itoa(port),
			"CONVREP_DIST_TEST_MODE="+mode)
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
	g, err := NewGroup("gloo", "127.0.0.1", port, rank, 2, -1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := float64(rank)
	switch os.Getenv("CONVREP_DIST_TEST_MODE") {
	case "overlap":
		overlapped(t, g, r, 8)
		overlapped(t, g, r, 1<<20)
		return
	case "partial":
		for _, bucketBytes := range []int64{4, 12, 1 << 20} { // each tensor alone; u with w; all in one
			partlyUsed(t, g, rank, bucketBytes)
		}
		return
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
	overlapped(t, g, r, 8)
	if err := g.Barrier(); err != nil {
		t.Fatal(err)
	}
}

// overlapped checks the gradient averaging that runs inside the backward pass: y = Σ (w1·x)·w2 over two
// parameters, in buckets of their own (bucketBytes 8) or sharing one, one pass unarmed (it only accumulates),
// one armed. Rank r's input is x = r+1, so the gradients are the ranks' means of (1+1)·x·w2 and (1+1)·x·w1
// after two passes. The gradients must then be views of the buckets' buffers, and a second step, whose
// gradients autograd adds into those views after they were zeroed in place (as the optimiser zeroes them),
// must average just as well.
func overlapped(t *testing.T, g *Group, r float64, bucketBytes int64) {
	w1 := ts.MustOfSlice([]float32{2, 3}).MustSetRequiresGrad(true, false)
	w2 := ts.MustOfSlice([]float32{5, 7}).MustSetRequiresGrad(true, false)
	unused := ts.MustOfSlice([]float32{1}).MustSetRequiresGrad(true, false)
	o, err := g.NewOverlap([]*ts.Tensor{w2, w1, unused}, bucketBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	x := ts.MustOfSlice([]float32{float32(r) + 1, float32(r) + 1})
	wantEarly := 2 // each used tensor is a bucket, sent as soon as backward reaches it
	if bucketBytes > 20 {
		wantEarly = 0 // one bucket with the unused tensor, which only Finish sends
	}
	for step := 0; step < 2; step++ {
		for pass := 0; pass < 2; pass++ {
			if pass == 1 {
				o.Arm()
			}
			y := x.MustMul(w1, false).MustMul(w2, true).MustSum(gotch.Float, true)
			if err := y.Backward(); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Finish(); err != nil {
			t.Fatal(err)
		}
		// mean over ranks of 2·(r+1) is 3: grad w1 = 3·w2, grad w2 = 3·w1.
		expect(t, fmt.Sprintf("step %d, buckets of %d bytes: overlapped grad w1", step, bucketBytes), w1.MustGrad(false).Float64Values(), []float64{15, 21})
		expect(t, fmt.Sprintf("step %d, buckets of %d bytes: overlapped grad w2", step, bucketBytes), w2.MustGrad(false).Float64Values(), []float64{6, 9})
		if u := unused.MustGrad(false); u.MustDefined() {
			t.Fatalf("a parameter outside the graph got gradient %v", u.Float64Values())
		}
		if o.Early() != wantEarly {
			t.Fatalf("%d buckets went out during the backward pass, want %d", o.Early(), wantEarly)
		}
		if v := o.Views(); v != 2 {
			t.Fatalf("%d gradients are views of their bucket, want both used parameters'", v)
		}
		for _, w := range []*ts.Tensor{w1, w2} {
			w.MustGrad(false).MustZero_()
		}
	}
}

// partlyUsed checks the averaging of a parameter u that only rank 0's graph reaches, beside w, which both
// reach, and z, which neither does: y = Σ x·w, plus u·x₀ on rank 0, with x = r+1. Every rank must send
// u's bucket (in buckets of bucketBytes: 4 bytes puts each tensor in a bucket of its own, so a rank that
// skipped u's would pair w's with the other rank's u's) and take the mean of u's gradient, (1 + 0)/2, as
// its own; z keeps no gradient on either rank. The second step starts from the gradients zeroed in place.
func partlyUsed(t *testing.T, g *Group, rank int, bucketBytes int64) {
	u := ts.MustOfSlice([]float32{3}).MustSetRequiresGrad(true, false)
	w := ts.MustOfSlice([]float32{5, 7}).MustSetRequiresGrad(true, false)
	z := ts.MustOfSlice([]float32{1}).MustSetRequiresGrad(true, false)
	o, err := g.NewOverlap([]*ts.Tensor{u, w, z}, bucketBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	x := ts.MustOfSlice([]float32{float32(rank) + 1, float32(rank) + 1})
	for step := 0; step < 2; step++ {
		o.Arm()
		y := x.MustMul(w, false).MustSum(gotch.Float, true)
		if rank == 0 {
			y = y.MustAdd(u.MustMul(x.MustNarrow(0, 0, 1, false), false).MustSum(gotch.Float, true), true)
		}
		if err := y.Backward(); err != nil {
			t.Fatal(err)
		}
		if err := o.Finish(); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("rank %d, step %d, buckets of %d bytes", rank, step, bucketBytes)
		expect(t, what+": grad w", w.MustGrad(false).Float64Values(), []float64{1.5, 1.5})
		gu := u.MustGrad(false)
		if !gu.MustDefined() {
			t.Fatalf("%s: u has no gradient, though rank 0 had one", what)
		}
		expect(t, what+": grad u", gu.Float64Values(), []float64{0.5})
		if gz := z.MustGrad(false); gz.MustDefined() {
			t.Fatalf("%s: z, which no rank's graph reaches, got gradient %v", what, gz.Float64Values())
		}
		for _, p := range []*ts.Tensor{u, w} {
			p.MustGrad(false).MustZero_()
		}
	}
}

func TestNewGroupRefusesBadRanks(t *testing.T) {
	for _, c := range []struct{ rank, world, port int }{{2, 2, 1234}, {-1, 2, 1234}, {0, 0, 1234}, {0, 2, 70000}} {
		if _, err := NewGroup("gloo", "127.0.0.1", c.port, c.rank, c.world, -1, time.Second); err == nil {
			t.Errorf("rank %d of %d on port %d was accepted", c.rank, c.world, c.port)
		}
	}
	if _, err := NewGroup("mpi", "127.0.0.1", freePort(t), 0, 1, -1, time.Second); err == nil {
		t.Error("an unknown backend was accepted")
	}
	if _, err := NewGroup("nccl", "127.0.0.1", freePort(t), 0, 1, -1, time.Second); err == nil || !strings.Contains(err.Error(), "NCCL needs a GPU") {
		t.Errorf("NCCL without a GPU: %v", err)
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
