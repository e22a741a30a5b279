//go:build !convrep_nokernels

#include "attention.h"
#include "handles.h"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cstring>
#include <exception>
#include <stdexcept>

// Written without a libtorch 2.x to compile its 2.x branch against: -tags convrep_nokernels builds
// kernels_stub.cpp in its place (HasAttention false, the encoder's explicit path), as for kernels.cpp.
//
// scaled_dot_product_attention came in libtorch 2.0 with the signature (query, key, value, attn_mask, dropout_p,
// is_causal); later versions added keyword arguments with defaults (scale in 2.1, enable_gqa in 2.5), so the
// six positional arguments below call the same op in every 2.x. _fused_sdp_choice takes the same six.
#if TORCH_VERSION_MAJOR >= 2
#define CONVREP_HAS_SDPA 1
#endif

using convrep::error_of, convrep::tensor;

namespace {

#ifdef CONVREP_HAS_SDPA
// The mask as the op takes it: no mask is nullopt. An optional holding an undefined tensor (what gotch passes
// for a missing tensor) would count as a mask to the backend selection and rule the flash kernel out.
c10::optional<at::Tensor> mask_of(void *keep) {
  if (keep == nullptr) return c10::nullopt;
  return tensor(keep);
}
#endif

} // namespace

int convrep_attention_compiled(void) {
#ifdef CONVREP_HAS_SDPA
  return 1;
#else
  return 0;
#endif
}

char *convrep_attention(void *q, void *k, void *v, void *keep, double p, void **out) {
  try {
#ifdef CONVREP_HAS_SDPA
    *out = new at::Tensor(at::scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), mask_of(keep), p, false));
    return nullptr;
#else
    (void)q, (void)k, (void)v, (void)keep, (void)p, (void)out;
    throw std::runtime_error("scaled_dot_product_attention: libtorch " TORCH_VERSION " has none (2.0 and later have it)");
#endif
  } catch (const std::exception &e) {
    return error_of(e);
  }
}

char *convrep_attention_backend(void *q, void *k, void *v, void *keep, double p, long long *backend) {
  try {
#ifdef CONVREP_HAS_SDPA
    *backend = static_cast<long long>(at::_fused_sdp_choice(tensor(q), tensor(k), tensor(v), mask_of(keep), p, false));
    return nullptr;
#else
    (void)q, (void)k, (void)v, (void)keep, (void)p, (void)backend;
    throw std::runtime_error("_fused_sdp_choice: libtorch " TORCH_VERSION " has none (2.0 and later have it)");
#endif
  } catch (const std::exception &e) {
    return error_of(e);
  }
}
