// Package jit makes convrep's fused CUDA kernels ready on a GPU: it compiles the program of internal/gpu/kernels
// for the device's architecture with NVRTC (internal/gpu/nvrtc, whose disk cache keeps the PTX between runs) and
// loads it through internal/torch, after which the encoder's dropout + residual + LayerNorm and bias + GELU
// run on them (models' block.fusedTail). Nothing here runs on a CPU, where the composites are the path.
package jit

import (
	"fmt"
	"math"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/gpu/kernels"
	"convrep/internal/gpu/nvrtc"
	"convrep/internal/torch"
)

// Loaded says what Enable did, for the run's log.
type Loaded struct {
	Arch     int           // compute capability, 90 on an H100 or H200
	NVRTC    string        // the NVRTC version that compiled the program
	CacheDir string        // where the PTX is kept
	Took     time.Duration // compiling (or reading the cache) and loading
}

// Enable compiles (or finds in the cache) the kernels for dev and loads them there. It fails on a CPU, on a
// build without CUDA, when no NVRTC library is found, or when the compile or the load fails; the error says
// which.
func Enable(dev gotch.Device) (Loaded, error) {
	start := time.Now()
	if !dev.IsCuda() {
		return Loaded{}, fmt.Errorf("fused kernels: %v is not a CUDA device", dev)
	}
	if !torch.KernelsCompiled() {
		return Loaded{}, fmt.Errorf("fused kernels: this build of convrep has no CUDA (run make setup against a libtorch with CUDA)")
	}
	arch, err := torch.ComputeCapability(dev)
	if err != nil {
		return Loaded{}, fmt.Errorf("fused kernels: %w", err)
	}
	major, minor, err := nvrtc.Version()
	if err != nil {
		return Loaded{}, fmt.Errorf("fused kernels: %w", err)
	}
	dir, err := nvrtc.DefaultCacheDir()
	if err != nil {
		return Loaded{}, fmt.Errorf("fused kernels: %w", err)
	}
	ptx, err := nvrtc.Cached(dir, kernels.Source(), "convrep_kernels.cu", arch)
	if err != nil {
		return Loaded{}, fmt.Errorf("fused kernels: compiling for compute_%d: %w", arch, err)
	}
	if err := torch.LoadKernels(dev, ptx); err != nil {
		return Loaded{}, err
	}
	return Loaded{Arch: arch, NVRTC: fmt.Sprintf("%d.%d", major, minor), CacheDir: dir, Took: time.Since(start)}, nil
}

// Check loads the kernels on dev and runs one of them against libtorch's composite: LayerNorm(x + resid) of a
// 4×768 block of fixed values, forward, within 1e-4. convrep device runs it, so the set-up on a GPU host stops
// at a kernel that does not compile, load or compute, not the first training run.
func Check(dev gotch.Device) (err error) {
	if _, err := Enable(dev); err != nil {
		return err
	}
	const rows, cols = 4, 768
	vals := func(f func(i int) float64) []float32 {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(f(i))
		}
		return v
	}
	return torch.Catch("fused kernel check", func() error {
		on := func(v []float32) *ts.Tensor {
			return ts.MustOfSlice(v).MustView([]int64{rows, cols}, true).MustTo(dev, true)
		}
		x := on(vals(func(i int) float64 { return math.Sin(0.37 * float64(i)) }))
		resid := on(vals(func(i int) float64 { return float64(i%cols) / cols }))
		gamma := ts.MustOnes([]int64{cols}, gotch.Float, dev)
		beta := ts.MustZeros([]int64{cols}, gotch.Float, dev)
		defer torch.Drop(x, resid, gamma, beta)
		fused := torch.DropAddLayerNorm(x, resid, gamma, beta, 0, 1e-12)
		torch.UseKernels(false)
		composite := torch.DropAddLayerNorm(x, resid, gamma, beta, 0, 1e-12)
		torch.UseKernels(true)
		defer torch.Drop(fused, composite)
		d := fused.MustSub(composite, false).MustAbs(true).MustMax(true)
		defer d.MustDrop()
		if worst := d.Float64Values()[0]; !(worst <= 1e-4) {
			return fmt.Errorf("fused kernels: dropout+residual+LayerNorm differs from libtorch's by %g", worst)
		}
		return nil
	})
}
