#include "clip.h"

#include <ATen/Functions.h>
#include <torch/version.h>
#include <cstring>
#include <exception>
#include <vector>

// _foreach_mul_ with a 0-dim tensor is in libtorch from 2.3 on (native_functions.yaml: _foreach_mul_.Tensor),
// which torch 2.x's clip_grad_norm_ uses; before, one mul_ per gradient.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define CONVREP_CLIP_FOREACH_TENSOR 1
#endif

// The order of torch/nn/utils/clip_grad.py (2.x, foreach path): norms = _foreach_norm(grads, 2);
// total = vector_norm(stack(norms), 2); coef = max_norm / (total + 1e-6), which Python computes as
// reciprocal(total + 1e-6) * max_norm; clamped = coef.clamp(max=1); _foreach_mul_(grads, clamped).
char *convrep_clip_grad_norm(int n, void **params, double max_norm, void **total) {
  try {
    std::vector<at::Tensor> grads;
    for (int i = 0; i < n; i++) {
      const at::Tensor &g = static_cast<at::Tensor *>(params[i])->grad();
      if (g.defined()) grads.push_back(g);
    }
    if (grads.empty()) {
      at::TensorOptions opt = at::TensorOptions().dtype(at::kFloat);
      if (n > 0) opt = opt.device(static_cast<at::Tensor *>(params[0])->device());
      *total = new at::Tensor(at::zeros({}, opt));
      return nullptr;
    }
    std::vector<at::Tensor> norms = at::_foreach_norm(grads, 2);
    at::Tensor norm = at::stack(norms, 0).norm();
    at::Tensor coef = norm.add(1e-6).reciprocal_().mul_(max_norm).clamp_max_(1.0);
#ifdef CONVREP_CLIP_FOREACH_TENSOR
    at::_foreach_mul_(grads, coef);
#else
    for (auto &g : grads) g.mul_(coef);
#endif
    *total = new at::Tensor(norm);
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}
