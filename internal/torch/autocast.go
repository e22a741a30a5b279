package torch

// #include <stdlib.h>
// #include "autocast.h"
import "C"

import (
	"fmt"
	"os"
	"runtime"

	"github.com/sugarme/gotch"
)

// Autocast switches libtorch's automatic mixed precision on for dev's device type with dtype as the low
// precision, the way Python's torch.autocast does: the parameters stay fp32 in the VarStore (the master
// weights the optimiser updates) and each op that autocast lists (matmul, linear, ...) casts its inputs to
// dtype as it runs, while the ops it keeps in fp32 (softmax, layer norm, losses) get fp32 inputs.
// Backward runs outside autocast and leaves fp32 gradients on the fp32 parameters.
//
// Autocast state is per OS thread in libtorch: the caller must hold runtime.LockOSThread from Autocast until
// restore returns, and call restore on the same goroutine (WithAutocast does both). restore puts back the
// previous state and, when it leaves the outermost autocast, clears autocast's cache of low-precision weight
// copies, which are stale after an optimiser step; so enter and restore once per training step, around
// the forward pass and the loss. Calling restore more than once does nothing the second time.
//
// CPU autocast takes only BFloat16 (libtorch 1.13 to 2.1); CUDA takes BFloat16 or Half.
func Autocast(dev gotch.Device, dtype gotch.DType) (restore func(), err error) {
	cuda := dev.IsCuda()
	switch {
	case cuda && dtype != gotch.BFloat16 && dtype != gotch.Half:
		return nil, fmt.Errorf("autocast on %v: dtype %v is not BFloat16 or Half", dev, dtype)
	case !cuda && dtype != gotch.BFloat16:
		return nil, fmt.Errorf("autocast on %v: CPU autocast supports BFloat16 only, got %v", dev, dtype)
	}
	var prevOn, prevDType C.int
	if err := takeError(C.convrep_autocast_enter(cBool(cuda), C.int(dtype.CInt()), &prevOn, &prevDType)); err != nil {
		return nil, fmt.Errorf("autocast on %v with %v: %w", dev, dtype, err)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		// The exit sets thread-local flags only; it has no failure a caller could act on.
		takeError(C.convrep_autocast_exit(cBool(cuda), prevOn, prevDType))
	}, nil
}

// WithAutocast runs fn under Autocast(dev, dtype) locked to the current OS thread, and restores the previous
// state even when fn panics.
func WithAutocast(dev gotch.Device, dtype gotch.DType, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := Autocast(dev, dtype)
	if err != nil {
		return err
	}
	defer restore()
	return fn()
}

// AutocastEnabled reports whether autocast is on for dev's device type on the calling OS thread, and with
// which low-precision dtype.
func AutocastEnabled(dev gotch.Device) (bool, gotch.DType) {
	var dt C.int
	on := C.convrep_autocast_enabled(cBool(dev.IsCuda()), &dt) != 0
	return on, gotch.DType(dt)
}

// oneDNN, which runs libtorch's CPU bf16 matmuls, picks Intel AMX kernels on CPUs that have them. The
// oneDNN 2.6.3 that Debian's libtorch 1.13 links dies of SIGILL (a tile instruction in its JIT code) on this
// project's AMX machines, even after the process asked the kernel for AMX (arch_prctl) and plain AMX code runs. Capping its ISA at AVX-512
// with bf16, before libtorch first asks oneDNN, only takes AMX away: no fp32 kernel uses it, and GPUs are
// unaffected. A user who sets either variable keeps their choice.
func init() {
	if os.Getenv("ONEDNN_MAX_CPU_ISA") == "" && os.Getenv("DNNL_MAX_CPU_ISA") == "" {
		os.Setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
	}
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
