package torch

// #include <stdlib.h>
// #include "profile.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// Profile runs fn under libtorch's Kineto profiler (torch.profiler's), with the GPU's kernels when cuda, and
// writes the Chrome trace to path: scripts/kernel_breakdown.py sums its kernels. fn runs on the calling
// thread, whose operators are the ones recorded; the caller holds its OS thread.
func Profile(path string, cuda bool, fn func() error) error {
	if err := takeError(C.convrep_profile_start(cBool(cuda))); err != nil {
		return fmt.Errorf("profiler: %w", err)
	}
	ferr := fn()
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	if err := takeError(C.convrep_profile_stop(p)); err != nil {
		return fmt.Errorf("profiler: %w", err)
	}
	return ferr
}
