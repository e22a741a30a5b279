// convrep's C shim for libtorch's fused attention, scaled_dot_product_attention, beside shim.h.
#ifndef CONVREP_ATTENTION_H
#define CONVREP_ATTENTION_H
#ifdef __cplusplus
extern "C" {
#endif
// 1 when the linked libtorch has scaled_dot_product_attention (2.0 and later), else 0.
int convrep_attention_compiled(void);
// out = softmax(q·kᵀ/√d + mask)·v with dropout p on the probabilities: at::scaled_dot_product_attention.
// q, k, v: [B, heads, T, d]. keep: a boolean [B, 1, 1, T] mask (true = attend), or NULL for none, which is
// passed as no mask at all (nullopt), not as an undefined tensor, so that the flash kernel stays eligible.
// Returns NULL on success, or a malloc'ed error message the caller frees.
char *convrep_attention(void *q, void *k, void *v, void *keep, double p, void **out);
// The backend libtorch picks for that call (at::_fused_sdp_choice), as its SDPBackend number: 0 math,
// 1 flash, 2 memory-efficient, 3 cuDNN, 4 overrideable, -1 none. Errors as above.
char *convrep_attention_backend(void *q, void *k, void *v, void *keep, double p, long long *backend);
#ifdef __cplusplus
}
#endif
#endif
