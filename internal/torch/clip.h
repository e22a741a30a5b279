// convrep's C shim for gradient clipping, beside adam.h. Tensors are gotch's handles (torch::Tensor*); the
// function returns NULL on success, or a malloc'ed error message the caller frees.
#ifndef CONVREP_CLIP_H
#define CONVREP_CLIP_H
#ifdef __cplusplus
extern "C" {
#endif
// torch.nn.utils.clip_grad_norm_(params, max_norm) with foreach=True, norm_type 2: the gradients of the n
// params that have one are scaled in place by min(1, max_norm / (total + 1e-6)), total being the L2 norm of
// their L2 norms; *total is a new handle of that norm, a 0-dim tensor on the gradients' device (0 in float on
// the first param's device when no param has a gradient). Nothing is read back to the host.
char *convrep_clip_grad_norm(int n, void **params, double max_norm, void **total);
#ifdef __cplusplus
}
#endif
#endif
