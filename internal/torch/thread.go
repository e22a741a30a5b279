package torch

import "runtime"

// Thread is one OS thread that runs libtorch work handed to it, in order. A program that runs libtorch on
// more than one thread (a model loaded on one, forward passes on another) makes each of them an OpenMP
// master with a team of its own; libgomp then counts more threads than CPUs and throttles its spinning, so
// its workers sleep and are woken by futex at every parallel region. On 2 cores that doubled a short
// forward pass in convrep serve (3.4 to 8 ms at p50). Running all of it on one Thread keeps one team.
type Thread struct {
	jobs chan func()
}

// NewThread starts a goroutine locked to its own OS thread for the life of the program, running what Do
// hands it.
func NewThread() *Thread {
	t := &Thread{jobs: make(chan func())}
	go func() {
		runtime.LockOSThread() // never unlocked: libtorch's grad mode, autocast and OpenMP state are per thread
		for f := range t.jobs {
			f()
		}
	}()
	return t
}

// Do runs f on the thread and returns when it has run.
func (t *Thread) Do(f func()) {
	done := make(chan struct{})
	t.jobs <- func() {
		defer close(done)
		f()
	}
	<-done
}
