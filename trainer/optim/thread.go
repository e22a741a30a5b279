package optim

import (
	"runtime"

	"convrep/internal/torch"
)

// guarded runs fn on one OS thread (gotch reads libtorch's error from a thread-local slot after each call)
// and turns a panic of a gotch Must* call into an error prefixed by what.
//
// Nothing here switches autograd off: parameters are updated through detached aliases (see param.data),
// and gradients, moments and the norms of ClipGradNorm do not require grad, so no op is recorded.
// That also keeps clear of internal/torch.NoGrad, whose restore relies on gotch's GradSetEnabled; in
// v0.9.1 that reports the previous mode from an 8-byte read of a C int and so is often wrong.
func guarded(what string, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return torch.Catch(what, fn)
}
