package torch

// #include <stdlib.h>
// #include "graph.h"
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// CUDAMemInfo is the free and total memory of dev's GPU, as the CUDA runtime reports them.
func CUDAMemInfo(dev gotch.Device) (free, total int64, err error) {
	var f, t C.longlong
	if err := takeError(C.convrep_cuda_mem_info(C.int(dev.Value), &f, &t)); err != nil {
		return 0, 0, fmt.Errorf("GPU memory: %w", err)
	}
	return int64(f), int64(t), nil
}

// GraphsCompiled reports whether this build can capture CUDA graphs (a CUDA libtorch).
func GraphsCompiled() bool { return C.convrep_graph_compiled() == 1 }

// StepGraph is what a training loop asks of a CUDA graph. *Graph is one; on the CPU, tests stand in for it
// with a graph that replays by running the captured function again (devtest.RerunGraph).
type StepGraph interface {
	OnStream(fn func() error) error
	Capture(fn func() error) error
	Replay() error
	Free()
}

var _ StepGraph = (*Graph)(nil)

// Graph is one CUDA graph and the side stream it is captured on (libtorch's at::cuda::CUDAGraph, as
// torch.cuda.graph uses it). The calling goroutine must hold its OS thread from NewGraph to Free: the
// current stream, like the current device, is per thread.
type Graph struct {
	p        unsafe.Pointer
	captured bool
}

// NewGraph makes an empty graph for dev's GPU; on the CPU, or with a libtorch built without CUDA, it fails
// saying so.
func NewGraph(dev gotch.Device) (*Graph, error) {
	if !dev.IsCuda() {
		return nil, errors.New("CUDA graphs need a GPU, the device is the CPU")
	}
	var p unsafe.Pointer
	if err := takeError(C.convrep_graph_new(C.int(dev.Value), &p)); err != nil {
		return nil, err
	}
	return &Graph{p: p}, nil
}

// OnStream runs fn with the graph's stream current: it first waits for the work queued so far on the
// thread's stream, and the thread's stream waits for fn's work after it (CUDA events, no host wait).
func (g *Graph) OnStream(fn func() error) (err error) {
	if err := takeError(C.convrep_graph_enter(g.p)); err != nil {
		return fmt.Errorf("CUDA graph: %w", err)
	}
	defer func() {
		if e := takeError(C.convrep_graph_leave(g.p)); e != nil {
			err = errors.Join(err, fmt.Errorf("CUDA graph: %w", e))
		}
	}()
	return fn()
}

// Capture records fn, which runs on the graph's stream and executes nothing: each Replay runs the work it
// queued, on the tensors it used. It captures once; an error from fn or from libtorch (an op that cannot be
// captured, such as a copy from pageable memory or a read back to the host) ends the capture and is returned.
func (g *Graph) Capture(fn func() error) error {
	if g.captured {
		return errors.New("CUDA graph: captured already")
	}
	return g.OnStream(func() error {
		if err := takeError(C.convrep_graph_capture_begin(g.p)); err != nil {
			return fmt.Errorf("CUDA graph capture: %w", err)
		}
		ferr := fn()
		if err := takeError(C.convrep_graph_capture_end(g.p)); err != nil || ferr != nil {
			return errors.Join(ferr, err)
		}
		g.captured = true
		return nil
	})
}

// Replay launches the captured work on the calling thread's current stream.
func (g *Graph) Replay() error {
	if !g.captured {
		return errors.New("CUDA graph: nothing captured")
	}
	countCall()
	if err := takeError(C.convrep_graph_replay(g.p)); err != nil {
		return fmt.Errorf("CUDA graph replay: %w", err)
	}
	return nil
}

// Free releases the graph and its memory pool.
func (g *Graph) Free() {
	if g != nil && g.p != nil {
		C.convrep_graph_free(g.p)
		g.p = nil
	}
}

// CopyAsync is dst.copy_(src, non_blocking=true): from pinned host memory or another device tensor, the host
// does not wait for the copy.
func CopyAsync(dst, src *ts.Tensor) error {
	countCall()
	if err := takeError(C.convrep_copy_async(dst.Ctensor(), src.Ctensor())); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}
