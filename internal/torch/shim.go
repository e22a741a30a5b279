// Package torch is convrep's thin layer over libtorch and gotch: the C++ shim for what gotch lacks (seeding,
// threads) and the helpers that hide gotch's sharp edges (Must* functions that exit the process, thread-local
// error and grad state) from model code.
//
// cgo_flags.go, beside this file, is written by `go run ./cmd/setup` for the libtorch it finds.
package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/sugarme/gotch"
)

func takeError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(concise(C.GoString(msg)))
}

// concise is libtorch's error message without the C++ frames it carries (after "Exception raised from", or
// after the first "frame #" of an enforce failure such as the allocator's), which belong in a debugger: the user
// reads one message, e.g. "DefaultCPUAllocator: can't allocate memory: you tried to allocate 16777216 bytes".
func concise(msg string) string {
	for _, tail := range []string{"\nException raised from", "\nframe #"} {
		if i := strings.Index(msg, tail); i >= 0 {
			msg = msg[:i]
		}
	}
	return strings.TrimSpace(msg)
}

// ManualSeed seeds libtorch's default generators (CPU, and every GPU in a CUDA build).
func ManualSeed(seed uint64) error {
	if err := takeError(C.convrep_manual_seed(C.uint64_t(seed))); err != nil {
		return fmt.Errorf("manual seed %d: %w", seed, err)
	}
	return nil
}

// SetDeterministic makes libtorch use deterministic kernels only, as torch.use_deterministic_algorithms does:
// an op that has none then fails with an error naming it. CPU training is deterministic already; on a GPU
// several backward kernels (index_add_, scatter_add_ ...) accumulate with atomics, so without this a resumed
// run is not bit-identical to an uninterrupted one. On CUDA, cuBLAS needs CUBLAS_WORKSPACE_CONFIG as well
// (DeterministicCuBLASEnv).
func SetDeterministic(on bool) error {
	v := 0
	if on {
		v = 1
	}
	if err := takeError(C.convrep_set_deterministic(C.int(v))); err != nil {
		return fmt.Errorf("deterministic algorithms: %w", err)
	}
	return nil
}

// Deterministic reports whether SetDeterministic(true) is in force.
func Deterministic() bool { return C.convrep_deterministic() == 1 }

// DeterministicCuBLASEnv is the cuBLAS workspace setting deterministic CUDA kernels need (CUDA's cuBLAS
// documentation, "Results reproducibility"; libtorch checks for it in Context::checkCuBLASConfigDeterministic).
const DeterministicCuBLASEnv = "CUBLAS_WORKSPACE_CONFIG=:4096:8"

// SetNumThreads sets the size of libtorch's intra-op thread pool.
func SetNumThreads(n int) error {
	if n < 1 {
		return fmt.Errorf("number of threads must be at least 1, got %d", n)
	}
	if err := takeError(C.convrep_set_num_threads(C.int(n))); err != nil {
		return fmt.Errorf("set %d threads: %w", n, err)
	}
	return nil
}

// NumThreads is the size of libtorch's intra-op thread pool.
func NumThreads() int { return int(C.convrep_get_num_threads()) }

// RNGState is the state of libtorch's default generator on dev, as torch.get_rng_state (the CPU) or
// torch.cuda.get_rng_state (a GPU) returns it. With SetRNGState it lets a resumed run draw the same dropout
// masks as an uninterrupted one. A GPU's state fails in a CPU build.
func RNGState(dev gotch.Device) ([]byte, error) {
	var data *C.uint8_t
	var n C.int64_t
	if err := takeError(C.convrep_get_rng_state(deviceIndex(dev), &data, &n)); err != nil {
		return nil, fmt.Errorf("read the RNG state of %s: %w", DeviceName(dev), err)
	}
	defer C.free(unsafe.Pointer(data))
	return C.GoBytes(unsafe.Pointer(data), C.int(n)), nil
}

// SetRNGState restores a state RNGState returned for a device of the same kind.
func SetRNGState(dev gotch.Device, state []byte) error {
	if len(state) == 0 {
		return fmt.Errorf("restore the RNG state of %s: empty state", DeviceName(dev))
	}
	if err := takeError(C.convrep_set_rng_state(deviceIndex(dev), (*C.uint8_t)(unsafe.Pointer(&state[0])), C.int64_t(len(state)))); err != nil {
		return fmt.Errorf("restore the RNG state of %s: %w", DeviceName(dev), err)
	}
	return nil
}

// SeedRNG seeds dev's default generator alone (ManualSeed seeds every device's).
func SeedRNG(dev gotch.Device, seed uint64) error {
	if err := takeError(C.convrep_seed_rng(deviceIndex(dev), C.uint64_t(seed))); err != nil {
		return fmt.Errorf("seed the generator of %s with %d: %w", DeviceName(dev), seed, err)
	}
	return nil
}

// CPURNGState is RNGState(gotch.CPU).
func CPURNGState() ([]byte, error) { return RNGState(gotch.CPU) }

// SetCPURNGState is SetRNGState(gotch.CPU, state).
func SetCPURNGState(state []byte) error { return SetRNGState(gotch.CPU, state) }

// SetCUDADevice makes GPU index the current device of the calling OS thread (and so the device a CUDA context
// and NCCL's communicators are created on), as c10::cuda::set_device does.
func SetCUDADevice(index int) error {
	if index < 0 {
		return fmt.Errorf("set the current GPU: index %d is negative", index)
	}
	if err := takeError(C.convrep_set_cuda_device(C.int(index))); err != nil {
		return fmt.Errorf("make cuda:%d the current GPU: %w", index, err)
	}
	return nil
}

// deviceIndex is the shim's name for dev: -1 for the CPU, else the GPU's index.
func deviceIndex(dev gotch.Device) C.int {
	if !dev.IsCuda() {
		return -1
	}
	return C.int(dev.Value)
}

// DeviceName writes dev as model.device does: cpu or cuda:N.
func DeviceName(dev gotch.Device) string {
	if !dev.IsCuda() {
		return "cpu"
	}
	return fmt.Sprintf("cuda:%d", dev.Value)
}
