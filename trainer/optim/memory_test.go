package optim

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Mixed dtypes get separate scratch buffers and each follows the reference.
func TestMixedDtypes(t *testing.T) {
	lockThread(t)
	init := []float64{0.5, -0.25, 1.5}
	a := leaf(t, init, []int64{3}, gotch.Float)
	b := leaf(t, init, []int64{3}, gotch.Double)
	opt, err := New(Config{Kind: AdamW}, []Group{{Params: []*ts.Tensor{a, b}, ParamNames: []string{"a", "b"}, LR: 0.1, WeightDecay: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := Config{Kind: AdamW}.withDefaults()
	refA, refB := &refParam{p: roundTo(init, gotch.Float)}, &refParam{p: roundTo(init, gotch.Double)}
	for s := 1; s <= 3; s++ {
		g := []float64{float64(s), -0.5, 0.125 * float64(s)}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		backward(t, []*ts.Tensor{a, b}, [][]float64{g, g})
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		refA.update(cfg, 0.1, 0.1, g)
		refB.update(cfg, 0.1, 0.1, g)
	}
	compare(t, "a (f32)", values(t, a), refA.p, 1e-6, 1)
	compare(t, "b (f64)", values(t, b), refB.p, 1e-12, 1)
}

// The moments Step makes on a parameter's first step outlive the torch.Scope of that step: the trainer frees
// what a step made, and a freed moment would crash the next step.
func TestMomentsOutliveStepScope(t *testing.T) {
	lockThread(t)
	init := []float64{0.5, -0.25, 1.5}
	a := leaf(t, init, []int64{3}, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, []Group{{Params: []*ts.Tensor{a}, ParamNames: []string{"a"}, LR: 0.1, WeightDecay: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := Config{Kind: AdamW}.withDefaults()
	ref := &refParam{p: roundTo(init, gotch.Float)}
	for s := 1; s <= 3; s++ {
		g := []float64{float64(s), -0.5, 0.125 * float64(s)}
		scope := torch.NewScope()
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		backward(t, []*ts.Tensor{a}, [][]float64{g})
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if err := scope.Free(); err != nil {
			t.Fatal(err)
		}
		ref.update(cfg, 0.1, 0.1, g)
	}
	compare(t, "a", values(t, a), ref.p, 1e-6, 1)
}

// Resident memory stays flat over many steps: every temporary and every handle of a step is freed. Adam with
// L2 allocates a parameter-sized tensor per step, so a leak of it would add 8 MB a step.
func TestStepMemoryIsFlat(t *testing.T) {
	lockThread(t)
	const n = 1 << 21
	init := make([]float64, n)
	for i := range init {
		init[i] = float64(i%7) - 3
	}
	p := leaf(t, init, []int64{n}, gotch.Float)
	opt, err := New(Config{Kind: Adam}, []Group{{Params: []*ts.Tensor{p}, ParamNames: []string{"p"}, LR: 1e-3, WeightDecay: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	backward(t, []*ts.Tensor{p}, [][]float64{init})
	var warm int64
	for s := 1; s <= 200; s++ {
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if _, err := ClipGradNorm([]*ts.Tensor{p}, 1e9); err != nil {
			t.Fatal(err)
		}
		if s == 20 {
			warm = resident(t)
		}
	}
	if growth := resident(t) - warm; growth > 64<<20 {
		t.Fatalf("resident memory grew by %.1f MiB over 180 steps", float64(growth)/(1<<20))
	}
}

// resident reads the process's resident set size.
func resident(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatalf("read resident memory: %v", err)
	}
	fields := strings.Fields(string(b))
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		t.Fatalf("parse /proc/self/statm %q: %v", b, err)
	}
	return pages * int64(os.Getpagesize())
}
