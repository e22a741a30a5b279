// Package devtest tells tests which device and collective backend to run on. By default they run on the CPU
// with Gloo; scripts/gpu_check.sh sets CONVREP_TEST_DEVICE=cuda and CONVREP_TEST_BACKEND=nccl so that the same
// tests exercise the CUDA path, and there a test that finds no GPU fails instead of skipping.
package devtest

import (
	"os"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/internal/torch"
)

// Name is the device the tests run on, as the experiment files and flags spell it: "cpu" or "cuda".
func Name() string {
	if d := os.Getenv("CONVREP_TEST_DEVICE"); d != "" {
		return d
	}
	return "cpu"
}

// Device is the device the tests run on. An unknown name, or cuda without a GPU, fails the test.
func Device(t testing.TB) gotch.Device {
	t.Helper()
	dev, err := torch.ParseDevice(Name())
	if err != nil {
		t.Fatalf("CONVREP_TEST_DEVICE: %v", err)
	}
	return dev
}

// Backend is the collective backend of the data-parallel tests: "gloo" by default, "nccl" on GPUs.
func Backend() string {
	if b := os.Getenv("CONVREP_TEST_BACKEND"); b != "" {
		return b
	}
	return "gloo"
}

// RerunGraph stands in for a CUDA graph (torch.StepGraph) on the CPU: capturing records the function without
// running it, and each replay runs it again, as a graph's replay runs its kernels again. It counts what it
// was asked.
type RerunGraph struct {
	body                         func() error
	OnStreams, Captures, Replays int
}

func (g *RerunGraph) OnStream(fn func() error) error { g.OnStreams++; return fn() }
func (g *RerunGraph) Capture(fn func() error) error  { g.Captures++; g.body = fn; return nil }
func (g *RerunGraph) Replay() error                  { g.Replays++; return g.body() }
func (g *RerunGraph) Free()                          {}
