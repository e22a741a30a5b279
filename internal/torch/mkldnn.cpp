#include "mkldnn.h"
#include "handles.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <exception>
#include <vector>

using convrep::error_of, convrep::handle, convrep::tensor;

int convrep_mkldnn_available(void) { return at::hasMKLDNN() ? 1 : 0; }

char *convrep_mkldnn_weight(void *wh, void **out) {
  try {
    const at::Tensor &w = tensor(wh);
    TORCH_CHECK(w.dim() == 2 && w.device().is_cpu() && w.scalar_type() == at::kFloat,
                "a oneDNN weight is a CPU float32 matrix, got ", w.scalar_type(), " ", w.sizes(), " on ", w.device());
    *out = handle(w.detach().contiguous().to_mkldnn());
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_mkldnn_linear(void *xh, void *wh, void *bh, void **out) {
  try {
    const at::Tensor &x = tensor(xh), &wp = tensor(wh);
    TORCH_CHECK(wp.is_mkldnn() && wp.dim() == 2, "oneDNN linear: the weight is not packed (convrep_mkldnn_weight)");
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1 && x.size(-1) == wp.size(1),
                "oneDNN linear: x is ", x.scalar_type(), " ", x.sizes(), " on ", x.device(), ", the weight ",
                wp.sizes());
    c10::optional<at::Tensor> bias;
    if (bh != nullptr) bias = tensor(bh);
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = wp.size(0);
    at::Tensor flat = x.reshape({-1, x.size(-1)}).contiguous();
    at::Tensor y = at::mkldnn_linear(flat.to_mkldnn(), wp, bias).to_dense();
    *out = handle(y.view(sizes));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_grad_enabled(void) { return at::GradMode::is_enabled() ? 1 : 0; }

int64_t convrep_tensor_version(void *th) { return static_cast<int64_t>(tensor(th)._version()); }
