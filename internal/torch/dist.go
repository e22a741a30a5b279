package torch

// #include <stdlib.h>
// #include "dist.h"
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// Group is a c10d process group: the ranks of one job, joined through a TCPStore that rank 0 serves, and
// the collectives of libtorch's Gloo (CPU) or NCCL (GPU) backend over them. A Group is used by one goroutine
// at a time; every rank must call the same collectives in the same order.
type Group struct {
	g           *C.convrep_group
	Rank, World int
	Backend     string
}

// HasBackend reports whether this build compiled c10d's backend name ("gloo" or "nccl") in.
func HasBackend(name string) bool {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.convrep_has_backend(cs) == 1
}

// NewGroup joins rank of world ranks at addr:port; it returns once every rank has joined, or fails after
// timeout, which also bounds every later collective. device is the GPU an NCCL group is bound to (each rank
// its own), -1 for a group on the CPU.
func NewGroup(backend, addr string, port, rank, world, device int, timeout time.Duration) (*Group, error) {
	if world < 1 || rank < 0 || rank >= world {
		return nil, fmt.Errorf("process group: rank %d of %d ranks is out of range", rank, world)
	}
	if backend == "nccl" && device < 0 {
		return nil, fmt.Errorf("process group: NCCL needs a GPU for rank %d (model.device cuda)", rank)
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("process group: port %d is out of range", port)
	}
	cb, ca := C.CString(backend), C.CString(addr)
	defer C.free(unsafe.Pointer(cb))
	defer C.free(unsafe.Pointer(ca))
	var g *C.convrep_group
	err := takeError(C.convrep_group_new(cb, ca, C.int(port), C.int(rank), C.int(world), C.int(device), C.int64_t(timeout.Milliseconds()), &g))
	if err != nil {
		return nil, fmt.Errorf("join %s process group at %s:%d as rank %d of %d: %w", backend, addr, port, rank, world, err)
	}
	return &Group{g: g, Rank: rank, World: world, Backend: backend}, nil
}

// Close leaves the group.
func (g *Group) Close() {
	if g != nil && g.g != nil {
		C.convrep_group_free(g.g)
		g.g = nil
	}
}

// handles lists the libtorch handles of xs for the shim. The slice lives in Go memory and holds C pointers
// only, which cgo allows.
func handles(xs []*ts.Tensor) []unsafe.Pointer {
	hs := make([]unsafe.Pointer, len(xs))
	for i, x := range xs {
		hs[i] = x.Ctensor()
	}
	return hs
}

// ReduceOp is how AllReduce combines the ranks' values.
type ReduceOp int

const (
	Sum ReduceOp = iota
	Max
	Min
)

// AllReduce combines x over the ranks in place.
func (g *Group) AllReduce(x *ts.Tensor, op ReduceOp) error {
	if err := takeError(C.convrep_allreduce(g.g, x.Ctensor(), C.int(op))); err != nil {
		return fmt.Errorf("all-reduce: %w", err)
	}
	return nil
}

// Broadcast overwrites each tensor with rank root's, in place.
func (g *Group) Broadcast(xs []*ts.Tensor, root int) error {
	if len(xs) == 0 {
		return nil
	}
	hs := handles(xs)
	if err := takeError(C.convrep_broadcast(g.g, &hs[0], C.int(len(hs)), C.int(root))); err != nil {
		return fmt.Errorf("broadcast of %d tensors from rank %d: %w", len(xs), root, err)
	}
	return nil
}

// AllGather stacks every rank's x along dimension 0 in rank order; x has the same shape on every rank. The
// result is new and carries no graph (see trainer's gather for the autograd-aware form).
func (g *Group) AllGather(x *ts.Tensor) (*ts.Tensor, error) {
	var out unsafe.Pointer
	if err := takeError(C.convrep_allgather(g.g, x.Ctensor(), &out)); err != nil {
		return nil, fmt.Errorf("all-gather: %w", err)
	}
	return ts.FromCtensor(out), nil
}

// Barrier returns once every rank has reached it.
func (g *Group) Barrier() error {
	if err := takeError(C.convrep_barrier(g.g)); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// Overlap averages gradients over the ranks while the backward pass still runs, as DDP's reducer does:
// hooks on the parameters' gradient accumulators send each bucket as soon as its gradients, and those of the
// buckets before it, are complete. Give the parameters in the order backward reaches them (last layer
// first) so that the first buckets fill first.
type Overlap struct {
	o *C.convrep_overlap
}

// NewOverlap registers the hooks on params (leaves that require gradients, the same list on every rank).
func (g *Group) NewOverlap(params []*ts.Tensor, bucketBytes int64) (*Overlap, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("overlapped all-reduce: no parameters")
	}
	hs := handles(params)
	var o *C.convrep_overlap
	if err := takeError(C.convrep_overlap_new(g.g, &hs[0], C.int(len(hs)), C.int64_t(bucketBytes), &o)); err != nil {
		return nil, fmt.Errorf("overlapped all-reduce: %w", err)
	}
	return &Overlap{o: o}, nil
}

// Arm makes the next backward pass send its gradients; passes before Arm (the first micro-batches of an
// accumulated step) only accumulate.
func (o *Overlap) Arm() { C.convrep_overlap_arm(o.o) }

// Finish follows the armed backward pass: it sends what is left, waits, and leaves every parameter's
// gradient averaged over the ranks. Every rank all-reduces every bucket, as DDP's reducer does: a parameter
// that received no gradient on some ranks counts as zeros there and gets the mean on every rank; one that
// received none on any rank keeps none. A step in which this rank's graph missed a parameter reads a flag
// back from the device.
func (o *Overlap) Finish() error {
	if err := takeError(C.convrep_overlap_finish(o.o)); err != nil {
		return fmt.Errorf("overlapped all-reduce: %w", err)
	}
	return nil
}

// Views is the number of parameters whose gradient is a view of its bucket's buffer: after Finish, every
// one that has a gradient.
func (o *Overlap) Views() int { return int(C.convrep_overlap_views(o.o)) }

// Early is the number of buckets the last armed backward pass sent while it ran; the others waited for
// Finish (parameters outside the graph, or hooks that never fired).
func (o *Overlap) Early() int { return int(C.convrep_overlap_early(o.o)) }

// Close turns the hooks off.
func (o *Overlap) Close() {
	if o != nil && o.o != nil {
		C.convrep_overlap_free(o.o)
		o.o = nil
	}
}
