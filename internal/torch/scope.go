package torch

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sugarme/gotch/ts"
)

// Scope frees, at once, every tensor handle made on its goroutine while it is open: what a training step made
// and did not drop itself (gradients read back, losses, scalars' results, intermediates of code that relies on
// finalizers). cmd/setup's patched gotch keeps no memory pressure per handle, so Go's garbage collector runs
// rarely and a forgotten tensor would hold its libtorch memory until it did; a Scope makes the release explicit
// and bounded by a step.
//
//	s := torch.NewScope()
//	defer s.Free()
//	... the step ...
//	s.Keep(runningLoss) // what must outlive the step
//
// A Scope sees only its own goroutine's handles (it locks the goroutine to its OS thread until Free and
// matches the thread), so tensors another goroutine makes meanwhile, a prefetched batch, are not freed.
// Scopes nest: Keep hands a tensor to the enclosing scope, if any. Model parameters and optimiser state made
// before the scope opens are not affected; state made lazily while it is open must be handed to Persist.
type Scope struct {
	tid    int
	parent *Scope
	made   []*ts.Tensor
	freed  bool
}

var (
	scopes     sync.Map     // OS thread id → its innermost open *Scope
	openScopes atomic.Int64 // how many scopes are open; 0 keeps the hook to one atomic load
	installOne sync.Once
)

// NewScope opens a scope on the calling goroutine, which stays locked to its OS thread until Free.
func NewScope() *Scope {
	installOne.Do(func() { ts.SetNewTensorHook(register) })
	runtime.LockOSThread()
	s := &Scope{tid: syscall.Gettid()}
	if p, ok := scopes.Load(s.tid); ok {
		s.parent = p.(*Scope)
	}
	scopes.Store(s.tid, s)
	openScopes.Add(1)
	return s
}

// register is gotch's hook, run on the goroutine that made t.
func register(t *ts.Tensor) {
	if openScopes.Load() == 0 {
		return
	}
	if s, ok := scopes.Load(syscall.Gettid()); ok {
		s := s.(*Scope)
		s.made = append(s.made, t)
	}
}

// Keep takes xs out of the scope: Free leaves them alive, and they belong to the enclosing scope if there is
// one, else to the caller, who drops them. A tensor the scope does not hold is ignored.
func (s *Scope) Keep(xs ...*ts.Tensor) {
	for _, x := range xs {
		for i := len(s.made) - 1; i >= 0; i-- { // kept tensors are usually the step's last
			if s.made[i] == x {
				s.made[i] = nil
				if p := s.open(); p != nil {
					p.made = append(p.made, x)
				}
				break
			}
		}
	}
}

// Persist takes xs out of every scope open on the calling goroutine: they live until dropped. State made
// lazily inside a step and meant to outlast it (an optimiser's moments on its first step) calls it; code that
// runs outside a scope is unaffected.
func Persist(xs ...*ts.Tensor) {
	if openScopes.Load() == 0 {
		return
	}
	v, ok := scopes.Load(syscall.Gettid())
	if !ok {
		return
	}
	for s := v.(*Scope); s != nil; s = s.parent {
		for _, x := range xs {
			for i := len(s.made) - 1; i >= 0; i-- {
				if s.made[i] == x {
					s.made[i] = nil
					break
				}
			}
		}
	}
}

// Len is the number of handles the scope holds, dropped ones included.
func (s *Scope) Len() int { return len(s.made) }

// Free drops every tensor the scope holds and has not been told to keep (tensors dropped already are
// skipped), closes the scope and unlocks the goroutine from its thread. It must run on the goroutine that
// opened the scope, innermost scope first; a second Free does nothing.
func (s *Scope) Free() error {
	if s.freed {
		return nil
	}
	s.freed = true
	for _, x := range s.made {
		if x != nil {
			x.MustDrop() // patched gotch: a no-op on a dropped tensor, never an error
		}
	}
	s.made = nil
	var err error
	if cur, _ := scopes.Load(s.tid); cur != s {
		err = fmt.Errorf("torch: a scope was freed while a scope it encloses was open, or on another thread")
	} else if p := s.open(); p != nil {
		scopes.Store(s.tid, p)
	} else {
		scopes.Delete(s.tid)
	}
	openScopes.Add(-1)
	runtime.UnlockOSThread()
	return err
}

// open is the nearest enclosing scope not yet freed (one freed out of order is skipped), or nil.
func (s *Scope) open() *Scope {
	p := s.parent
	for p != nil && p.freed {
		p = p.parent
	}
	return p
}
