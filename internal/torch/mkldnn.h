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
// 1 when this build calls oneDNN's inner product directly (it had oneDNN's header, and the process has the
// library), else 0: then the linears below go through at::mkldnn_linear.
int convrep_mkldnn_direct(void);
// 1 when the process has a shared oneDNN library (Debian's libtorch loads libdnnl.so.2), else 0.
int convrep_onednn_loaded(void);
// *out is a float32 weight w [out, in] copied once, detached from autograd, for convrep_mkldnn_linear: where
// oneDNN's C API is at hand (mkldnn.cpp), a byte tensor holding it in each layout the inner product chooses on
// this CPU; else a oneDNN tensor (Tensor::to_mkldnn), which libtorch's mkldnn_linear reorders on every call.
// With bf16 non-zero the copy is in bfloat16 (oneDNN's C API only).
char *convrep_mkldnn_weight(void *w, int bf16, void **out);
// *out is x·wᵀ + bias (float32) for a CPU float32 x [..., in], by oneDNN's inner product on the packed weight wp
// (convrep_mkldnn_weight); bias may be NULL. On a bfloat16 weight x is rounded to bfloat16 and the products
// summed in float32. It computes no gradient: callers run it where none is needed.
char *convrep_mkldnn_linear(void *x, void *wp, void *bias, void **out);
// 1 when convrep_cpu_attention can run: the BLAS libtorch loaded exports sgemm_ (OpenBLAS, the reference BLAS).
int convrep_cpu_attention_available(void);
// *out [B, T, H] is softmax(q·kᵀ/√dh + mask)·v for every head, the heads side by side, where q, k and v are the
// three H-wide thirds of qkv [B, T, 3H] (CPU float32, contiguous), each cut into heads of dh = H/heads; mask is
// NULL or the additive mask, B·T floats (0 at real keys, the lowest float at padding). One sgemm per head for
// the scores and one for the weighted values, each on the BLAS's strided views of qkv, with the mask and softmax
// between them in place: no copies of q, k or v and no permute of the result. No gradient: inference only.
char *convrep_cpu_attention(void *qkv, void *mask, int64_t heads, void **out);
// 1 when the calling thread records autograd (at::GradMode::is_enabled), else 0.
int convrep_grad_enabled(void);
// *out is the feed-forward w2·gelu(w1·x + b1) + b2 with the exact (erf) GELU, for a CPU float32 x [..., in], by
// two oneDNN inner products on packed weights (convrep_mkldnn_weight), the GELU a post-op of the first where
// oneDNN's C API is at hand, else oneDNN's GELU between them on its own tensors. On bfloat16 weights the GELU's
// output stays bfloat16 between the two. No gradient.
char *convrep_mkldnn_ffn(void *x, void *w1, void *b1, void *w2, void *b2, void **out);
// *out is LayerNorm(x) over x's last dimension with weight w and bias b (CPU float32), by oneDNN's layer
// normalisation where this build calls oneDNN, else by libtorch's.
char *convrep_mkldnn_layer_norm(void *x, void *w, void *b, double eps, void **out);
// The version counter of t (Tensor::_version): every in-place change, such as an optimiser step, raises it.
int64_t convrep_tensor_version(void *t);
#ifdef __cplusplus
}
#endif
#endif
