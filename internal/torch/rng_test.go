package torch

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// SeedRNG seeds the one generator it names: after ManualSeed(3), SeedRNG(cpu, 3) draws what ManualSeed(3)
// drew, another seed draws otherwise, and the state read back is the state a fresh ManualSeed leaves.
func TestSeedRNGSeedsTheCPUGenerator(t *testing.T) {
	draw := func() []float64 {
		x := ts.MustRand([]int64{6}, gotch.Float, gotch.CPU)
		defer x.MustDrop()
		return x.Float64Values()
	}
	if err := ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	want, err := RNGState(gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	a := draw()
	if err := SeedRNG(gotch.CPU, 3); err != nil {
		t.Fatal(err)
	}
	got, err := RNGState(gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("SeedRNG(cpu, 3) left another state than ManualSeed(3)")
	}
	if b := draw(); fmtFloats(a) != fmtFloats(b) {
		t.Fatalf("draws after SeedRNG(cpu, 3) %v, after ManualSeed(3) %v", b, a)
	}
	if err := SeedRNG(gotch.CPU, 4); err != nil {
		t.Fatal(err)
	}
	if c := draw(); fmtFloats(a) == fmtFloats(c) {
		t.Fatal("seeds 3 and 4 drew the same numbers")
	}
}

// In this CPU build a GPU's generator and current device are errors naming the device, never a crash.
func TestCUDAGeneratorFailsInACPUBuild(t *testing.T) {
	if gotch.CUDA.IsAvailable() {
		t.Skip("this libtorch has CUDA; the test is of the CPU build")
	}
	gpu := gotch.CudaBuilder(0)
	if _, err := RNGState(gpu); err == nil || !strings.Contains(err.Error(), "cuda:0") {
		t.Errorf("RNGState(cuda:0) = %v, want an error naming cuda:0", err)
	}
	if err := SetRNGState(gpu, make([]byte, 16)); err == nil {
		t.Error("SetRNGState(cuda:0) succeeded in a CPU build")
	}
	if err := SeedRNG(gpu, 1); err == nil {
		t.Error("SeedRNG(cuda:0) succeeded in a CPU build")
	}
	if err := SetCUDADevice(0); err == nil || !strings.Contains(err.Error(), "cuda:0") {
		t.Errorf("SetCUDADevice(0) = %v, want an error naming cuda:0", err)
	}
	if err := SetCUDADevice(-1); err == nil {
		t.Error("SetCUDADevice(-1) was accepted")
	}
}

func fmtFloats(xs []float64) string { return fmt.Sprint(xs) }
