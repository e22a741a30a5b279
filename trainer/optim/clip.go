package optim

import (
	"fmt"
	"math"

	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// ClipGradNorm scales the gradients of params in place so that their global L2 norm is at most maxNorm, as
// torch.nn.utils.clip_grad_norm_ (1.13, norm_type 2): total = ‖(‖g₁‖, …, ‖gₙ‖)‖, coef = maxNorm/(total+1e-6)
// clamped to 1, every gradient multiplied by coef. It returns total, the norm before clipping. Parameters
// without a gradient are skipped; with none, total is 0. As in torch (error_if_nonfinite=False), a NaN or
// infinite total is returned, not refused, and the gradients are scaled by the resulting coefficient; the
// caller decides whether to skip the step.
//
// It touches no VarStore, so unlike gotch's Optimizer.ClipGradNorm it takes no lock and cannot deadlock.
func ClipGradNorm(params []*ts.Tensor, maxNorm float64) (total float64, err error) {
	if !(maxNorm > 0) || math.IsInf(maxNorm, 0) {
		return 0, fmt.Errorf("optim: clip grad norm: max norm %v must be positive and finite", maxNorm)
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
			return nil
		}
		// The coefficient is computed on tensors, in the gradients' precision, as torch does:
		// max_norm / (total + 1e-6) is, in Python, (total + 1e-6).reciprocal() * max_norm.
		var s scalars
		defer s.free()
		all := c.keep("stack", func(out *lib.Ctensor) { lib.AtgStack(out, norms, len(norms), 0) })
		norm := c.keep("norm", func(out *lib.Ctensor) { lib.AtgNorm(out, all) })
		coef := c.keep("+1e-6", func(out *lib.Ctensor) { lib.AtgAddScalar(out, norm, s.float(1e-6)) })
		c.do("reciprocal", func(out *lib.Ctensor) { lib.AtgReciprocal_(out, coef) })
		c.do("× max", func(out *lib.Ctensor) { lib.AtgMulScalar_(out, coef, s.float(maxNorm)) })
		c.do("clamp", func(out *lib.Ctensor) { lib.AtgClampMax_(out, coef, s.float(1)) })
		for _, g := range grads {
			c.do("g × coef", func(out *lib.Ctensor) { lib.AtgMul_(out, g, coef) })
		}
		if c.err != nil {
			return c.err
		}
		total = lib.AtDoubleValueAtIndexes(norm, nil, 0)
		return ts.TorchErr()
	})
	return total, err
}
