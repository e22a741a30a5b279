package torch

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/sugarme/gotch/ts"
)

// Catch runs fn and returns, as an error, a panic raised inside it. gotch's Must* functions report libtorch
// errors by panicking (cmd/setup turns their log.Fatal into log.Panic), so model code can read like the math
// while its callers still get an ordinary error.
func Catch(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", what, r)
			if Debug {
				err = fmt.Errorf("%w\n%s", err, debug.Stack())
			}
		}
	}()
	return fn()
}

// Debug adds stack traces to the errors Catch returns.
var Debug = false

// NoGrad runs fn with autograd off and restores the previous mode even when fn panics.
// gotch's ts.NoGrad turns grad mode back on unconditionally and skips that on a panic.
// Grad mode is per OS thread, so fn runs locked to the current one.
func NoGrad(fn func() error) error {
	// The goroutine must stay on the thread whose grad mode it switched off.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, err := ts.GradSetEnabled(false)
	if err != nil {
		return err
	}
	defer ts.GradSetEnabled(prev)
	return fn()
}

// GradOn turns autograd on for the calling OS thread, which the caller holds (runtime.LockOSThread). Autograd's
// mode is per thread, and gotch's initialisers (models.New's) switch it off and on again with ts.NoGrad on
// whichever thread they happen to run: a goroutine that moves between the two calls leaves a thread with autograd
// off, and the next one to lock that thread would train nothing. A thread that trains sets the mode it needs.
func GradOn() error {
	_, err := ts.GradSetEnabled(true)
	return err
}

// Drop frees tensors now rather than when the garbage collector runs their finalizers; nil entries are skipped.
// Dropping intermediates keeps resident memory flat over long runs (libtorch memory is invisible to Go's GC).
func Drop(xs ...*ts.Tensor) {
	for _, x := range xs {
		if x != nil {
			x.MustDrop()
		}
	}
}
