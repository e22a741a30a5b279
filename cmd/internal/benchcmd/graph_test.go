package benchcmd

import (
	"io"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/internal/devtest"
	"convrep/internal/torch"
)

// With --cuda-graphs the bench times replays of a captured step. On the CPU, with a stand-in graph that
// replays by running the captured body again, the loss after the same four steps (one warm-up, the capture,
// two timed) equals the eager bench's bit for bit: the static input takes each new batch whole, and the
// optimiser's device scalars give the bits of its host scalars. The graph was asked for the warm-up step on
// its stream, one capture and three replays (the captured step's own, two timed), and the line says
// cuda_graphs.
func TestBenchCUDAGraphsReplayTheEagerStep(t *testing.T) {
	stand := &devtest.RerunGraph{}
	old := newGraph
	newGraph = func(gotch.Device) (torch.StepGraph, error) { return stand, nil }
	t.Cleanup(func() { newGraph = old })
	shape := []string{"--layers", "1", "--hidden", "32", "--heads", "2", "--vocab", "500", "--batch", "4", "--seq", "8",
		"--steps", "2", "--threads", "1", "--seed", "7", "--count-calls=false"}
	graphed, line := benchLine(t, append(shape, "--warmup", "1", "--cuda-graphs")...)
	eager, _ := benchLine(t, append(shape, "--warmup", "2")...)
	if !graphed.CUDAGraphs || eager.CUDAGraphs {
		t.Errorf("cuda_graphs %v with --cuda-graphs and %v without", graphed.CUDAGraphs, eager.CUDAGraphs)
	}
	if graphed.Loss != eager.Loss {
		t.Errorf("loss %.9g replayed, %.9g eager: %s", graphed.Loss, eager.Loss, line)
	}
	if stand.OnStreams != 1 || stand.Captures != 1 || stand.Replays != 3 {
		t.Errorf("asked the graph for %d eager steps, %d captures, %d replays; want 1, 1, 3", stand.OnStreams, stand.Captures, stand.Replays)
	}
}

// On the CPU --cuda-graphs stops before timing anything, saying that it needs a GPU.
func TestBenchCUDAGraphsNeedAGPU(t *testing.T) {
	o, err := parseFlags([]string{"--layers", "1", "--hidden", "32", "--heads", "2", "--vocab", "500", "--batch", "2",
		"--seq", "4", "--steps", "1", "--cuda-graphs"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = run(o, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--cuda-graphs") || !strings.Contains(err.Error(), "GPU") {
		t.Errorf("run = %v, want an error saying --cuda-graphs needs a GPU", err)
	}
}
