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
