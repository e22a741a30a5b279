package optim

import (
	"fmt"

	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// The legacy per-parameter Adam of kernels_test.go calls gotch's C bindings (package libtch) directly, one cgo
// call and a free of the handle per op, as the optimiser and ClipGradNorm did before internal/torch's shim
// took each over in one call.

// handle is the libtorch handle (a torch::Tensor*) of a gotch tensor; the tensor keeps ownership.
func handle(t *ts.Tensor) lib.Ctensor { return lib.Ctensor(t.Ctensor()) }

// calls runs a sequence of libtch ops, stopping at the first libtorch error, and owns the handles of the
// results it keeps until release. Callers hold the OS thread (see guarded): libtorch's error is per thread.
type calls struct {
	err  error
	kept []lib.Ctensor
}

// do runs op, whose binding writes a new handle to its result (for an in-place op, an alias of self) into
// out; do frees that handle.
func (c *calls) do(name string, op func(out *lib.Ctensor)) {
	if out := c.run(name, op); out != nil {
		lib.AtFree(out)
	}
}

// keep runs op like do but returns the result's handle, valid until release; nil after an error.
func (c *calls) keep(name string, op func(out *lib.Ctensor)) lib.Ctensor {
	out := c.run(name, op)
	if out != nil {
		c.kept = append(c.kept, out)
	}
	return out
}

func (c *calls) run(name string, op func(out *lib.Ctensor)) lib.Ctensor {
	if c.err != nil {
		return nil
	}
	var out lib.Ctensor
	op(&out)
	if err := ts.TorchErr(); err != nil {
		c.err = fmt.Errorf("%s: %w", name, err)
		return nil
	}
	return out
}

// release frees the kept handles (not the tensors' data, which libtorch frees with its last reference).
func (c *calls) release() {
	for _, h := range c.kept {
		lib.AtFree(h)
	}
	c.kept = nil
}

// grad returns a handle to t's gradient, kept, or nil when t has none.
func (c *calls) grad(t *ts.Tensor) lib.Ctensor {
	g := c.run("grad", func(out *lib.Ctensor) { lib.AtgGrad(out, handle(t)) })
	if g == nil {
		return nil
	}
	if !lib.AtDefined(g) {
		lib.AtFree(g)
		return nil
	}
	c.kept = append(c.kept, g)
	return g
}

// scalar is a libtorch Scalar.
type scalar = lib.Cscalar

// scalars owns libtorch Scalars until free.
type scalars []scalar

func (s *scalars) float(v float64) scalar {
	c := lib.AtsFloat(v)
	*s = append(*s, c)
	return c
}

func (s *scalars) free() {
	for _, c := range *s {
		lib.AtsFree(c)
	}
	*s = nil
}
