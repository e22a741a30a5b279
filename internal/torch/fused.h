// convrep's C shim for the encoder's fused ops, beside shim.h. Tensors are gotch's handles (torch::Tensor*);
// each function returns NULL on success, or a malloc'ed error message the caller frees, and *out is a new
// handle.
#ifndef CONVREP_FUSED_H
#define CONVREP_FUSED_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// [a; b; c] along dim 0, differentiable in each. When the three lie end to end in one storage (contiguous,
// in this order, same dtype, device and trailing sizes), the result is that memory itself: no copy, and
// backward splits the gradient into three views. Otherwise it is a concatenation.
char *convrep_join_rows(void *a, void *b, void *c, void **out);
// 1 when convrep_join_rows would join a, b and c without a copy.
int convrep_rows_end_to_end(void *a, void *b, void *c);
// The queries, keys and values of x [B, T, H] by the joined weights w [3·heads·dh, H] and bias [3·heads·dh]:
// one GEMM, its output cut into *q, *k, *v [B, heads, T, dh] with no copy; backward makes x's, w's and the
// bias's gradients from the three heads' gradients where they lie (fused.cpp, ProjectHeads). Under autocast the
// three inputs are cast to its dtype first, as a linear's are.
char *convrep_project_heads(void *x, void *w, void *bias, int64_t heads, void **q, void **k, void **v);
// gelu(x·wᵀ + bias), exact (tanh 0) or tanh-approximated (tanh 1). Where no gradient is needed, autocast is
// off and the device's _addmm_activation computes that GELU (probed numerically once per device type), one
// GEMM with the bias and GELU in its epilogue; otherwise linear, then gelu. *fused says which ran.
char *convrep_dense_gelu(void *x, void *w, void *bias, int tanh, void **out, int *fused);
// The GELU _addmm_activation computes on a device type (cuda 1, CPU 0): 1 exact (erf), 2 tanh, 0 neither
// or unavailable.
int convrep_addmm_gelu_kind(int cuda);
#ifdef __cplusplus
}
#endif
#endif
