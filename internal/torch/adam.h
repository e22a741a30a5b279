// convrep's C shim for the optimiser's update of a parameter group in one call, beside shim.h.
#ifndef CONVREP_ADAM_H
#define CONVREP_ADAM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// One Adam or AdamW update of the n parameters of a group, with trainer/optim's arithmetic (its adam.go).
// Tensors are gotch's handles (torch::Tensor*). params are the leaf parameters, whose gradients are read;
// data their detached aliases, updated in place; scratch per parameter a tensor of its shape for the
// temporaries of the per-tensor kernels (NULL: allocate). exp_avg and exp_avg_sq are the moments, NULL
// until a parameter first has a gradient: they are made then (zeros like it) and written back. A parameter
// without a gradient is skipped; steps[i] is incremented for each one updated. denom_scale[i] and
// eps_scale[i] are the folded bias-correction terms of parameter i at its step after this one.
// decay (when has_decay) multiplies the parameters (AdamW), l2 (when has_l2) times the parameter is added
// to the gradient (Adam); move_params 0 leaves the parameters as they are (learning rate 0). kernels: 0 the
// device's choice (on a GPU libtorch's fused kernels where it has them and coef is NULL, else foreach
// kernels; fused ones on the CPU), 1 per tensor, 2 foreach, 3 fused (one pass over each contiguous CPU
// parameter; others per tensor), 4 libtorch's _fused_adam(w)_ (hyper's scalars; libtorch 2.1 and later). coef,
// when not NULL, is a [3] tensor of the parameters' dtype and device holding decay, the denominator's and
// eps's folded terms, read on the device in place of decay, denom_scale and eps_scale (which are then unused,
// as is move_params): CUDA graphs replay the update with the values it holds at each replay.
// Returns NULL on success, or a malloc'ed error message the caller frees, with *bad the index of the
// parameter it is about or -1.
// The plain hyperparameters of an update, which the fused device kernels (kernels 4) take in place of the
// folded terms: lr, β1, β2, the weight decay (AdamW's decoupled one when adamw, else Adam's L2) and eps.
typedef struct {
  double lr, beta1, beta2, weight_decay, eps;
  int adamw;
} convrep_adam_hyper;

char *convrep_adam_step(int n, void **params, void **data, void **scratch, void **exp_avg, void **exp_avg_sq,
                        int64_t *steps, const double *denom_scale, const double *eps_scale, double beta1_weight,
                        double beta2_weight, int has_decay, double decay, int has_l2, double l2, int move_params,
                        int kernels, void *coef, const convrep_adam_hyper *hyper, int *bad);
// 1 when the linked libtorch has _fused_adam(w)_ (2.1 and later), else 0.
int convrep_fused_adam_compiled(void);
// 1 when it also has their overloads with a tensor learning rate (used from 2.3 on), else 0.
int convrep_fused_adam_coef_compiled(void);
// Zeroes in place every defined gradient of the n parameters (foreach kernels).
char *convrep_zero_grads(int n, void **params);
#ifdef __cplusplus
}
#endif
#endif
