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
	"unsafe"
)

func takeError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}

// ManualSeed seeds libtorch's default generators (CPU, and every GPU in a CUDA build).
func ManualSeed(seed uint64) error {
	if err := takeError(C.convrep_manual_seed(C.uint64_t(seed))); err != nil {
		return fmt.Errorf("manual seed %d: %w", seed, err)
	}
	return nil
}

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

// CPURNGState is the default CPU generator's state, as torch.get_rng_state returns it. With SetCPURNGState it
// lets a resumed run draw the same dropout masks and initialisations as an uninterrupted one.
func CPURNGState() ([]byte, error) {
	var data *C.uint8_t
	var n C.int64_t
	if err := takeError(C.convrep_get_cpu_rng_state(&data, &n)); err != nil {
		return nil, fmt.Errorf("read CPU RNG state: %w", err)
	}
	defer C.free(unsafe.Pointer(data))
	return C.GoBytes(unsafe.Pointer(data), C.int(n)), nil
}

// SetCPURNGState restores a state CPURNGState returned.
func SetCPURNGState(state []byte) error {
	if len(state) == 0 {
		return fmt.Errorf("restore CPU RNG state: empty state")
	}
	if err := takeError(C.convrep_set_cpu_rng_state((*C.uint8_t)(unsafe.Pointer(&state[0])), C.int64_t(len(state)))); err != nil {
		return fmt.Errorf("restore CPU RNG state: %w", err)
	}
	return nil
}
