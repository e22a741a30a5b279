// convrep's C shim for oneDNN (mkldnn) inference linears, beside shim.h. Tensors are gotch's handles
// (torch::Tensor*); each function returns NULL on success, or a malloc'ed error message the caller frees.
#ifndef CONVREP_MKLDNN_H
#define CONVREP_MKLDNN_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// 1 when the linked libtorch has oneDNN for the CPU (at::hasMKLDNN), else 0.
int convrep_mkldnn_available(void);
// *out is a float32 weight w [out, in] copied once into oneDNN's layout (Tensor::to_mkldnn), detached from
// autograd, for convrep_mkldnn_linear.
char *convrep_mkldnn_weight(void *w, void **out);
// *out is x·wᵀ + bias for a CPU float32 x [..., in], by oneDNN's inner product on the packed weight wp
// (convrep_mkldnn_weight); bias may be NULL. It computes no gradient: callers run it where none is needed.
char *convrep_mkldnn_linear(void *x, void *wp, void *bias, void **out);
// 1 when the calling thread records autograd (at::GradMode::is_enabled), else 0.
int convrep_grad_enabled(void);
// The version counter of t (Tensor::_version): every in-place change, such as an optimiser step, raises it.
int64_t convrep_tensor_version(void *t);
#ifdef __cplusplus
}
#endif
#endif
