#include "mkldnn.h"
#include "handles.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
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

namespace {
// The Fortran BLAS's sgemm_, column-major, every argument by address.
typedef void (*convrep_sgemm_fn)(const char *transa, const char *transb, const int *m, const int *n, const int *k,
                                 const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
                                 const float *beta, float *c, const int *ldc);

// The sgemm_ of the BLAS libtorch loaded, or nullptr (a libtorch with MKL linked in keeps it to itself).
convrep_sgemm_fn convrep_sgemm() {
  static convrep_sgemm_fn f = reinterpret_cast<convrep_sgemm_fn>(dlsym(RTLD_DEFAULT, "sgemm_"));
  return f;
}
} // namespace

int convrep_cpu_attention_available(void) { return convrep_sgemm() != nullptr ? 1 : 0; }

char *convrep_cpu_attention(void *qkvh, void *mh, int64_t heads, void **out) {
  try {
    const at::Tensor &x = tensor(qkvh);
    TORCH_CHECK(x.dim() == 3 && x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous() &&
                    heads > 0 && x.size(2) % (3 * heads) == 0,
                "CPU attention: qkv is ", x.scalar_type(), " ", x.sizes(), " on ", x.device(),
                ", want contiguous float32 [B, T, 3H] with H a multiple of ", heads, " heads");
    convrep_sgemm_fn gemm = convrep_sgemm();
    TORCH_CHECK(gemm != nullptr, "CPU attention: the BLAS libtorch loaded has no sgemm_");
    const int64_t B = x.size(0), T = x.size(1), H = x.size(2) / 3, dh = H / heads;
    at::Tensor mask;
    const float *add = nullptr;
    if (mh != nullptr) {
      mask = tensor(mh).contiguous();
      TORCH_CHECK(mask.scalar_type() == at::kFloat && mask.device().is_cpu() && mask.numel() == B * T,
                  "CPU attention: the mask is ", mask.scalar_type(), " ", mask.sizes(), ", want ", B * T, " floats");
      add = mask.data_ptr<float>();
    }
    at::Tensor ctx = at::empty({B, T, H}, x.options());
    const float *base = x.data_ptr<float>();
    float *o = ctx.data_ptr<float>();
    const int t = static_cast<int>(T), d = static_cast<int>(dh), ld3 = static_cast<int>(3 * H), ldo = static_cast<int>(H);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh))), one = 1, zero = 0;
    // The (row, head) pairs are independent: libtorch's intra-op threads take them in shares, each with its own
    // scores buffer (the BLAS runs GEMMs this small on the calling thread).
    at::parallel_for(0, T > 0 ? B * heads : 0, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> s(static_cast<size_t>(T * T));
      for (int64_t bh = begin; bh < end; bh++) {
        const int64_t b = bh / heads, h = bh % heads;
        const float *q = base + b * T * 3 * H + h * dh, *k = q + H, *v = q + 2 * H;
        // Row-major scores S[i][j] = q_i·k_j·scale: column-major, S is (kᵀ)ᵀ·q with k and q as dh x T.
        gemm("T", "N", &t, &t, &d, &scale, k, &ld3, q, &ld3, &zero, s.data(), &t);
        for (int64_t i = 0; i < T; i++) {
          float *row = s.data() + i * T;
          if (add != nullptr) {
            for (int64_t j = 0; j < T; j++) row[j] += add[b * T + j];
          }
          float top = *std::max_element(row, row + T), sum = 0;
          for (int64_t j = 0; j < T; j++) {
            row[j] = std::exp(row[j] - top);
            sum += row[j];
          }
          for (int64_t j = 0; j < T; j++) row[j] /= sum;
        }
        // Row-major context C[i] = Σ_j S[i][j]·v_j, written at its head's columns of ctx [B, T, H]: column-major,
        // C (dh x T, ld H) is v (dh x T, ld 3H) times S (T x T).
        gemm("N", "N", &d, &t, &t, &one, v, &ld3, s.data(), &t, &zero, o + b * T * H + h * dh, &ldo);
      }
    });
    *out = handle(ctx);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_grad_enabled(void) { return at::GradMode::is_enabled() ? 1 : 0; }

char *convrep_mkldnn_ffn(void *xh, void *w1h, void *b1h, void *w2h, void *b2h, void **out) {
  try {
    const at::Tensor &x = tensor(xh), &w1 = tensor(w1h), &w2 = tensor(w2h);
    TORCH_CHECK(w1.is_mkldnn() && w2.is_mkldnn() && w1.dim() == 2 && w2.dim() == 2 && w2.size(1) == w1.size(0),
                "oneDNN feed-forward: the weights are not packed (convrep_mkldnn_weight) or do not chain");
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1 && x.size(-1) == w1.size(1),
                "oneDNN feed-forward: x is ", x.scalar_type(), " ", x.sizes(), " on ", x.device(), ", the weight ",
                w1.sizes());
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = w2.size(0);
    at::Tensor flat = x.reshape({-1, x.size(-1)}).contiguous();
    c10::optional<at::Tensor> b1, b2;
    if (b1h != nullptr) b1 = tensor(b1h);
    if (b2h != nullptr) b2 = tensor(b2h);
    at::Tensor inner = at::gelu(at::mkldnn_linear(flat.to_mkldnn(), w1, b1), "none");
    *out = handle(at::mkldnn_linear(inner, w2, b2).to_dense().view(sizes));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int64_t convrep_tensor_version(void *th) { return static_cast<int64_t>(tensor(th)._version()); }
