package optim

import (
	"fmt"
	"math"

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
	for i, p := range params {
		if p == nil {
			return nil, fmt.Errorf("optim: clip grad norm: param %d is nil", i)
		}
	}
	if total, err = torch.ClipGradNorm(params, maxNorm); err != nil {
		return nil, fmt.Errorf("optim: clip grad norm: %w", err)
	}
	return total, err
}
