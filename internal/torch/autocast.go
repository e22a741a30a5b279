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
// Only BFloat16 is taken. CPU autocast supports nothing else (libtorch 1.13 to 2.1); CUDA's also runs Half,
// but fp16's 5-bit exponent underflows small gradients to zero unless the loss is scaled up before backward
// and the gradients down after (torch.cuda.amp.GradScaler), and convrep has no gradient scaler. bf16 keeps
// fp32's exponent range and needs none.
func Autocast(dev gotch.Device, dtype gotch.DType) (restore func(), err error) {
	cuda := dev.IsCuda()
	switch {
	case cuda && dtype == gotch.Half:
		return nil, fmt.Errorf("autocast on %v: Half needs a gradient scaler, which convrep does not have; use BFloat16", dev)
	case dtype != gotch.BFloat16:
		return nil, fmt.Errorf("autocast on %v: BFloat16 only, got %v", dev, dtype)
	}
	restore, err = enter(cuda, true, dtype)
	if err != nil {
		return nil, fmt.Errorf("autocast on %v with %v: %w", dev, dtype, err)
	}
	return restore, nil
}

// enter sets the calling thread's autocast state for one device type (on with dtype, or off) as a nested
// level, and returns what puts the previous state back.
func enter(cuda, on bool, dtype gotch.DType) (restore func(), err error) {
	var prevOn, prevDType C.int
	if err := takeError(C.convrep_autocast_enter(cBool(cuda), cBool(on), C.int(dtype.CInt()), &prevOn, &prevDType)); err != nil {
		return nil, err
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

// WithoutAutocast runs fn with autocast off for both device types, CPU and CUDA, on the current OS thread,
// as Python's torch.autocast(enabled=False) does, and restores the previous state even when fn panics. A
// loss runs its arithmetic here under mixed precision: autocast casts the inputs of every op on its
// lower-precision list (mm, bmm, matmul, linear) to bf16 whatever their dtype, so fp32 inputs alone do
// not give fp32 similarities. Outside autocast it only costs the two state switches.
func WithoutAutocast(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, cuda := range []bool{false, true} {
		_, dtype := AutocastEnabled(gotch.CPU)
		if cuda {
			_, dtype = AutocastEnabled(gotch.CudaBuilder(0))
		}
		restore, err := enter(cuda, false, dtype)
		if err != nil {
			return fmt.Errorf("autocast off: %w", err)
		}
		defer restore()
	}
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
