package optim

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// ClipGradNorm scales the gradients of params in place so that their global L2 norm is at most maxNorm, as
// torch.nn.utils.clip_grad_norm_ (norm_type 2): total = ‖(‖g₁‖, …, ‖gₙ‖)‖, coef = maxNorm/(total+1e-6)
// clamped to 1, every gradient multiplied by coef. It returns total, the norm before clipping, read back to
// the host (ClipGradNormTensor leaves it on the device). Parameters without a gradient are skipped; with
// none, total is 0. As in torch (error_if_nonfinite=False), a NaN or infinite total is returned, not
// refused, and the gradients are scaled by the resulting coefficient; the caller decides what to do.
//
// It touches no VarStore, so unlike gotch's Optimizer.ClipGradNorm it takes no lock and cannot deadlock.
func ClipGradNorm(params []*ts.Tensor, maxNorm float64) (total float64, err error) {
	norm, err := ClipGradNormTensor(params, maxNorm)
	if err != nil {
		return 0, err
	}
	defer norm.MustDrop()
	v, err := torch.Read(norm)
	if err != nil {
		return 0, fmt.Errorf("optim: clip grad norm: %w", err)
	}
	return v[0], nil
}

// ClipGradNormTensor is ClipGradNorm without the host read: the norm comes back as a 0-dim tensor on the
// gradients' device, in their dtype, which the caller owns. Nothing in it waits for the device: the
// clamped coefficient multiplies the gradients as a tensor (torch 2.x's clip_grad_norm_ does the same,
// where 1.13 compared it with 1 on the host), so a training step can clip without a synchronisation.
func ClipGradNormTensor(params []*ts.Tensor, maxNorm float64) (total *ts.Tensor, err error) {
	if !(maxNorm > 0) || math.IsInf(maxNorm, 0) {
		return nil, fmt.Errorf("optim: clip grad norm: max norm %v must be positive and finite", maxNorm)
	}
	err = guarded("optim: clip grad norm", func() error {
		c := &calls{}
		defer c.release()
		var grads, norms []lib.Ctensor
		for i, p := range params {
			if p == nil {
				return fmt.Errorf("param %d is nil", i)
			}
			if g := c.grad(p); g != nil {
				grads = append(grads, g)
				norms = append(norms, c.keep("norm", func(out *lib.Ctensor) { lib.AtgNorm(out, g) }))
			}
			if c.err != nil {
				return fmt.Errorf("param %d: %w", i, c.err)
			}
		}
		if len(grads) == 0 {
			dev := gotch.CPU
			if len(params) > 0 {
				dev = params[0].MustDevice()
			}
			total = ts.MustScalarTensor(ts.FloatScalar(0), gotch.Float, dev)
			return nil
		}
		// The coefficient is computed on tensors, in the gradients' precision, as torch does:
		// max_norm / (total + 1e-6) is, in Python, (total + 1e-6).reciprocal() * max_norm.
		var s scalars
		defer s.free()
		all := c.keep("stack", func(out *lib.Ctensor) { lib.AtgStack(out, norms, len(norms), 0) })
		norm := c.run("norm", func(out *lib.Ctensor) { lib.AtgNorm(out, all) }) // the caller's: not kept
		coef := c.keep("+1e-6", func(out *lib.Ctensor) { lib.AtgAddScalar(out, norm, s.float(1e-6)) })
		c.do("reciprocal", func(out *lib.Ctensor) { lib.AtgReciprocal_(out, coef) })
		c.do("× max", func(out *lib.Ctensor) { lib.AtgMulScalar_(out, coef, s.float(maxNorm)) })
		c.do("clamp", func(out *lib.Ctensor) { lib.AtgClampMax_(out, coef, s.float(1)) })
		for _, g := range grads {
			c.do("g × coef", func(out *lib.Ctensor) { lib.AtgMul_(out, g, coef) })
		}
		if c.err != nil {
			if norm != nil {
				lib.AtFree(norm)
			}
			return c.err
		}
		total = ts.New(norm)
		return nil
	})
	return total, err
}
