// Package jit makes convrep's fused CUDA kernels ready on a GPU: it compiles the program of internal/kernels
// for the device's architecture with NVRTC (internal/nvrtc, whose disk cache keeps the PTX between runs) and
// loads it through internal/torch, after which the encoder's dropout + residual + LayerNorm and bias + GELU
// run on them (models' block.fusedTail). Nothing here runs on a CPU, where the composites are the path.
package jit

import (
	"fmt"
	"time"

	"github.com/sugarme/gotch"

	"convrep/internal/kernels"
	"convrep/internal/nvrtc"
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
