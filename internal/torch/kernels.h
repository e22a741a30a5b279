// convrep's C shim for its own fused CUDA kernels (internal/gpu/kernels' program, compiled to PTX with NVRTC by
// internal/gpu/nvrtc), loaded and launched with the CUDA driver API, beside shim.h.
#ifndef CONVREP_KERNELS_H
#define CONVREP_KERNELS_H
#ifdef __cplusplus
extern "C" {
#endif
// 1 when the shim was built with CUDA (the kernels can be loaded), else 0.
int convrep_kernels_compiled(void);
// Loads the PTX program (NUL-terminated) on CUDA device `device` and resolves every entry the ops launch.
// Returns NULL on success, or a malloc'ed error message the caller frees.
char *convrep_kernels_load(int device, const char *ptx);
// The compute capability of CUDA device `device` as major·10 + minor (90 on an H100 or H200), or -1 with
// *err set (malloc'ed) when it cannot be read.
int convrep_compute_capability(int device, char **err);
// 1 when convrep_kernels_load succeeded for `device`.
int convrep_kernels_loaded(int device);
// out = LayerNorm(dropout(x, p) + resid) over the last dimension, with weight gamma and bias beta (float32),
// as one autograd op whose forward and backward are one kernel each; the dropout mask is drawn from the
// device's default CUDA generator and regenerated in backward. x, resid: float32 or bfloat16 on a device
// where the kernels are loaded (resid is cast to x's dtype). p = 0 is no dropout (evaluation).
char *convrep_drop_add_layer_norm(void *x, void *resid, void *gamma, void *beta, double p, double eps, void **out);
// out = gelu(x·wᵀ + bias), the erf GELU, as a GEMM without bias (autocast's dtype) followed by one autograd
// op whose forward and backward are one kernel each; the backward recomputes the GELU from x·wᵀ.
char *convrep_dense_bias_gelu(void *x, void *w, void *bias, void **out);
// out = dropout(LayerNorm(word[ids] + pos[pos_ids] + type[type_ids]), p) over the last dimension, with weight
// gamma and bias beta: the embeddings of a BERT-like encoder, one kernel forward and one backward (the tables'
// gradients by libtorch's embedding backward) where the kernels are loaded and take these tensors, else
// libtorch's lookups, add, layer_norm and dropout. type and type_ids are NULL where there are no token types.
char *convrep_embed_layer_norm(void *word, void *pos, void *type, void *ids, void *pos_ids, void *type_ids,
                               void *gamma, void *beta, double p, double eps, void **out);
#ifdef __cplusplus
}
#endif
#endif
