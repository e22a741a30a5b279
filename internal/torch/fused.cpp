#include "fused.h"
#include "handles.h"
#include "autocast_state.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

using convrep::error_of, convrep::tensor;

namespace {

// Whether b starts where a ends and c where b ends, in one storage, each contiguous, alike in dtype, device
// and every size but the first.
bool end_to_end(const at::Tensor &a, const at::Tensor &b, const at::Tensor &c) {
  for (const at::Tensor *t : {&b, &c}) {
    if (t->scalar_type() != a.scalar_type() || t->device() != a.device() || t->dim() != a.dim() ||
        t->dim() == 0 || !t->sizes().slice(1).equals(a.sizes().slice(1)) || !t->has_storage() ||
        !t->storage().is_alias_of(a.storage())) {
      return false;
    }
  }
  if (a.dim() == 0 || !a.is_contiguous() || !b.is_contiguous() || !c.is_contiguous()) return false;
  auto end = [](const at::Tensor &t) { return static_cast<const char *>(t.data_ptr()) + t.numel() * t.element_size(); };
  return end(a) == b.data_ptr() && end(b) == c.data_ptr();
}

// The rows of three tensors as one: the shared memory where they lie end to end, else a copy. Backward hands
// each its rows of the gradient (views, which AccumulateGrad may keep as the gradient itself).
struct JoinRows : public torch::autograd::Function<JoinRows> {
  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &a, const at::Tensor &b,
                            const at::Tensor &c) {
    ctx->saved_data["rows"] = std::vector<int64_t>{a.size(0), b.size(0), c.size(0)};
    if (!end_to_end(a, b, c)) return at::cat({a, b, c}, 0);
    std::vector<int64_t> sizes = a.sizes().vec();
    sizes[0] = a.size(0) + b.size(0) + c.size(0);
    std::vector<int64_t> strides(sizes.size(), 1);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; d--) strides[d] = strides[d + 1] * sizes[d + 1];
    // A tensor of its own over a's storage, not a view in autograd's sense: nothing records it as derived
    // from a alone, and the optimiser's in-place steps on a, b and c (after backward) touch no graph.
    at::Tensor out = at::empty({0}, a.options());
    out.set_(a.storage(), a.storage_offset(), sizes, strides);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    std::vector<int64_t> rows = ctx->saved_data["rows"].toIntVector();
    const at::Tensor &g = grads[0];
    return {g.narrow(0, 0, rows[0]), g.narrow(0, rows[0], rows[1]), g.narrow(0, rows[0] + rows[1], rows[2])};
  }
};

// The queries, keys and values of x [B, T, H]: one GEMM by the joined weights w [3·heads·dh, H] and bias, its
// output cut into q, k and v [B, heads, T, dh] over the output's memory (what view, permute and unbind give,
// without their copies). Backward takes the three gradients as the attention's backward gives them and makes
// the input's, the weights' and the bias's gradients from each: dx = Σᵢ gᵢ·wᵢ (three GEMMs into one output,
// the sum autograd makes of three separate linears' input gradients, as in HuggingFace's BertSelfAttention),
// dwᵢ = gᵢᵀ·x and dbᵢ = Σ_rows gᵢ into their rows of dw and db. Joining the three gradients into the output's
// layout first, for one GEMM, copied them (three strided copies a layer, 4.3 ms of a BERT-base step at batch
// 1,024 on an H200, 2026-11-27). A gradient laid out as [B, T, heads, dh] (cuDNN's and the flash kernels', which
// allocate it in q's layout) is read where it lies; another layout is copied to that one.
struct ProjectHeads : public torch::autograd::Function<ProjectHeads> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x,
                                                const at::Tensor &w, const at::Tensor &bias, int64_t heads) {
    TORCH_CHECK(x.dim() == 3 && w.dim() == 2 && bias.dim() == 1 && heads > 0 && w.size(0) % (3 * heads) == 0 &&
                    w.size(1) == x.size(2) && bias.size(0) == w.size(0),
                "project heads: x ", x.sizes(), ", weights ", w.sizes(), " and bias ", bias.sizes(),
                " are not [B, T, H], [3·heads·dh, H] and [3·heads·dh] for ", heads, " heads");
    int64_t b = x.size(0), t = x.size(1), dh = w.size(0) / (3 * heads);
    at::Tensor x2 = x.reshape({b * t, x.size(2)});
    at::Tensor all = at::addmm(bias, x2, w.t());
    ctx->save_for_backward({x2, w});
    ctx->saved_data["sizes"] = std::vector<int64_t>{b, t, heads, dh};
    at::Tensor parts = all.view({b, t, 3, heads, dh}).permute({2, 0, 3, 1, 4});
    torch::autograd::variable_list out;
    for (int64_t i = 0; i < 3; i++) {
      // Tensors of their own over all's storage, as JoinRows's: not views in autograd's sense.
      at::Tensor p = parts.select(0, i);
      at::Tensor o = at::empty({0}, all.options());
      o.set_(all.storage(), p.storage_offset(), p.sizes(), p.strides());
      out.push_back(o);
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x2 = saved[0], &w = saved[1];
    std::vector<int64_t> s = ctx->saved_data["sizes"].toIntVector();
    int64_t n = s[0] * s[1], e = s[2] * s[3];
    bool need_x = ctx->needs_input_grad(0), need_w = ctx->needs_input_grad(1), need_b = ctx->needs_input_grad(2);
    const std::vector<int64_t> rows_dim{0};
    at::Tensor dx;
    at::Tensor dw = need_w ? at::empty_like(w) : at::Tensor();
    at::Tensor db = need_b ? at::empty({w.size(0)}, w.options()) : at::Tensor();
    for (int64_t i = 0; i < 3; i++) {
      at::Tensor dwi = need_w ? dw.narrow(0, i * e, e) : at::Tensor();
      at::Tensor dbi = need_b ? db.narrow(0, i * e, e) : at::Tensor();
      if (!grads[i].defined()) { // that head took no part in the loss: zero gradients for its weights
        if (need_w) dwi.zero_();
        if (need_b) dbi.zero_();
        continue;
      }
      at::Tensor g = grads[i].scalar_type() == w.scalar_type() ? grads[i] : grads[i].to(w.scalar_type());
      g = g.permute({0, 2, 1, 3}).reshape({n, e}); // the rows of [B, T, heads, dh]: a view of cuDNN's gradient
      if (need_x) {
        at::Tensor wi = w.narrow(0, i * e, e);
        if (!dx.defined()) {
          dx = at::mm(g, wi);
        } else if (dx.is_cuda()) {
          dx.addmm_(g, wi); // cuBLAS adds dx in its fp32 accumulator and rounds once: no extra pass over dx
        } else {
          dx.add_(at::mm(g, wi)); // the CPU's bf16 addmm_ rounds more (3.7 times the error, qkv_test.go)
        }
      }
      if (need_w) at::mm_out(dwi, g.t(), x2);
      if (need_b) at::sum_out(dbi, g, rows_dim);
    }
    at::Tensor gx = dx.defined() ? dx.view({s[0], s[1], x2.size(1)}) : at::Tensor();
    return {gx, dw, db, at::Tensor()};
  }
};

// What GELU _addmm_activation(use_gelu) computes on a device type, measured on a small problem whose
// pre-activations span [-5, 5], where exact and tanh GELU differ by up to 5e-4: libtorch 1.13-2.x compute
// the exact one on the CPU (addmm, then gelu_) and the tanh one on CUDA (cuBLASLt's GELU epilogue, or
// gelu_(..., "tanh") after the GEMM). 0 when it is neither, or fails.
int probe_gelu_kind(const at::Device &dev) {
  try {
    at::NoGradGuard no_grad;
    auto opts = at::TensorOptions().dtype(at::kFloat).device(dev);
    at::Tensor x = at::linspace(-2.5, 2.5, 64, opts).view({8, 8});
    at::Tensor w = at::eye(8, opts).mul(2).add(at::linspace(-0.05, 0.05, 64, opts).view({8, 8}));
    at::Tensor bias = at::linspace(-0.1, 0.1, 8, opts);
    at::Tensor fused = at::_addmm_activation(bias, x, w.t(), 1, 1, true);
    at::Tensor pre = at::addmm(bias, x, w.t());
    double erf = (fused - at::gelu(pre, "none")).abs().max().item<double>();
    double tanh = (fused - at::gelu(pre, "tanh")).abs().max().item<double>();
    if (erf < 2e-5 && tanh > 1e-4) return 1;
    if (tanh < 2e-5 && erf > 1e-4) return 2;
  } catch (const std::exception &) {
  }
  return 0;
}

int gelu_kind(const at::Device &dev) {
  static std::mutex mu;
  static int kinds[2] = {-1, -1};  // CPU, CUDA; -1 until probed
  int i = dev.is_cuda() ? 1 : 0;
  if (!dev.is_cuda() && !dev.is_cpu()) return 0;
  std::lock_guard<std::mutex> lock(mu);
  if (kinds[i] < 0) kinds[i] = probe_gelu_kind(dev.is_cuda() ? at::Device(at::kCUDA) : at::Device(at::kCPU));
  return kinds[i];
}

}  // namespace

char *convrep_join_rows(void *a, void *b, void *c, void **out) {
  try {
    *out = new at::Tensor(JoinRows::apply(tensor(a), tensor(b), tensor(c)));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_project_heads(void *xh, void *wh, void *bh, int64_t heads, void **q, void **k, void **v) {
  try {
    at::Tensor x = tensor(xh), w = tensor(wh), bias = tensor(bh);
    // What autocast does to a linear's inputs, done here where autograd records it: the custom function's
    // forward and backward then compute in one dtype, and the casts' backward hands fp32 weights their
    // gradients in fp32.
    if (convrep::autocast_on(x.is_cuda()) && at::isFloatingType(x.scalar_type())) {
      at::ScalarType dt = convrep::autocast_dtype(x.is_cuda());
      x = x.to(dt);
      w = w.to(dt);
      bias = bias.to(dt);
    }
    torch::autograd::variable_list parts = ProjectHeads::apply(x, w, bias, heads);
    *q = new at::Tensor(parts[0]);
    *k = new at::Tensor(parts[1]);
    *v = new at::Tensor(parts[2]);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_rows_end_to_end(void *a, void *b, void *c) { return end_to_end(tensor(a), tensor(b), tensor(c)) ? 1 : 0; }

char *convrep_dense_gelu(void *xh, void *wh, void *bh, int tanh, void **out, int *fused) {
  try {
    const at::Tensor &x = tensor(xh), &w = tensor(wh), &bias = tensor(bh);
    bool grad = at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad() || bias.requires_grad());
    // _addmm_activation has no derivative (libtorch 1.13 to 2.11): it serves passes that need none.
    if (!grad && x.dim() >= 2 && w.dim() == 2 && bias.dim() == 1 && x.scalar_type() == w.scalar_type() &&
        bias.scalar_type() == w.scalar_type() && x.device() == w.device() && !convrep::autocast_on(x.is_cuda()) &&
        gelu_kind(x.device()) == (tanh ? 2 : 1)) {
      std::vector<int64_t> sizes = x.sizes().vec();
      sizes.back() = w.size(0);
      at::Tensor y = at::_addmm_activation(bias, x.reshape({-1, x.size(-1)}), w.t(), 1, 1, true);
      *out = new at::Tensor(y.view(sizes));
      *fused = 1;
      return nullptr;
    }
    *out = new at::Tensor(at::gelu(at::linear(x, w, bias), tanh ? "tanh" : "none"));
    *fused = 0;
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_addmm_gelu_kind(int cuda) {
  try {
    return gelu_kind(cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU));
  } catch (const std::exception &) {
    return 0;
  }
}
