package trainer_test

import (
	"bytes"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/checkpoint"
	"convrep/internal/devtest"
	"convrep/internal/torch"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// graphRun trains the tiny DSE experiment with train.cuda_graphs and the given warm-up, and returns its
// output folder. On the CPU the graph is devtest.RerunGraph (returned); on a GPU (scripts/gpu_check.sh) the real one.
func graphRun(t *testing.T, warmup int) (string, *devtest.RerunGraph) {
	t.Helper()
	stand := &devtest.RerunGraph{}
	if devtest.Name() == "cpu" {
		old := *trainer.NewStepGraph
		*trainer.NewStepGraph = func(gotch.Device) (torch.StepGraph, error) { return stand, nil }
		t.Cleanup(func() { *trainer.NewStepGraph = old })
	}
	oldWarmup := *trainer.GraphWarmup
	*trainer.GraphWarmup = warmup
	t.Cleanup(func() { *trainer.GraphWarmup = oldWarmup })
	exp := trainertest.Experiment(t, t.TempDir(), "")
	// 200 pairs in batches of 16: 12 full steps and a partial 13th an epoch (DSE keeps it), then epoch 2.
	sets := []string{"data.max_examples=200", "train.epochs=2", "train.max_steps=14", "train.checkpoint_every=100", "train.cuda_graphs=true"}
	if err := trainertest.Run(t, exp, sets, false); err != nil {
		t.Fatal(err)
	}
	return outOf(exp), stand
}

// A run whose steps are captured once and replayed takes the very steps of a run that takes them all
// eagerly on the same padded batches, with the same optimiser arithmetic: the same loss and gradient norm at
// every step and the same weights after 14, bit for bit on the CPU (where the stand-in replays by running the
// body again) and within 1e-6 on a GPU (the bar). It warms up for 3 steps, captures the 4th, replays
// the 5th to 12th, steps the partial 13th eagerly, and replays the 14th.
func TestGraphedStepsMatchEagerSteps(t *testing.T) {
	graphed, g := graphRun(t, 3)
	eager, _ := graphRun(t, math.MaxInt32) // warm-up never ends: every step eager, on the graph's stream
	if devtest.Name() == "cpu" {
		if g.OnStreams != 3+1 || g.Captures != 1 || g.Replays != 10 {
			t.Errorf("the trainer asked the graph for %d eager steps, %d captures and %d replays, want 4, 1 and 10",
				g.OnStreams, g.Captures, g.Replays)
		}
	}
	tol := 0.0
	if devtest.Name() != "cpu" {
		tol = 1e-6
	}
	mg, err := trainer.ReadMetrics(filepath.Join(graphed, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	me, err := trainer.ReadMetrics(filepath.Join(eager, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mg) != 14 || len(me) != 14 {
		t.Fatalf("%d and %d metrics lines, want 14 each", len(mg), len(me))
	}
	for i := range mg {
		if math.Abs(mg[i].Loss-me[i].Loss) > tol || math.Abs(mg[i].GradNorm-me[i].GradNorm) > tol*me[i].GradNorm ||
			!reflect.DeepEqual(mg[i].Objective, me[i].Objective) && tol == 0 {
			t.Errorf("step %d: loss %.9g, norm %.9g, %v replayed; %.9g, %.9g, %v eager", mg[i].Step, mg[i].Loss,
				mg[i].GradNorm, mg[i].Objective, me[i].Loss, me[i].GradNorm, me[i].Objective)
		}
	}
	if tol == 0 {
		sameParamBits(t, rundir.At(graphed).CheckpointPath(14), rundir.At(eager).CheckpointPath(14))
	} else {
		sameParams(t, rundir.At(graphed).CheckpointPath(14), rundir.At(eager).CheckpointPath(14))
	}
}

// sameParamBits wants every param/ tensor of two checkpoints equal to the bit.
func sameParamBits(t *testing.T, a, b string) {
	t.Helper()
	fa, err := safetensors.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := safetensors.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string][]byte{}
	for _, x := range fb.Tensors {
		other[x.Name] = x.Data
	}
	n := 0
	for _, x := range fa.Tensors {
		if strings.HasPrefix(x.Name, checkpoint.ParamPrefix) {
			n++
			if !bytes.Equal(x.Data, other[x.Name]) {
				t.Errorf("%s differs between the runs", x.Name)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s holds no parameters", a)
	}
}
