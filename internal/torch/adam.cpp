#include "adam.h"
#include "handles.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <immintrin.h>
#include <cmath>
#include <torch/version.h>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <vector>

// libtorch 2.0 added _foreach_lerp_ (native_functions.yaml; torch.optim's multi-tensor Adam uses it from 2.0 on);
// 1.13 has the other _foreach_ ops used here (mul, add, sqrt, div and addcdiv with one scalar per tensor, zero_).
#if TORCH_VERSION_MAJOR >= 2
#define CONVREP_FOREACH_LERP 1
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define CONVREP_FOREACH_TENSOR 1
#endif
// _fused_adam_ and _fused_adamw_ (native_functions.yaml; CUDA kernels in aten/src/ATen/native/cuda/
// fused_adam_impl.cu and fused_adamw_impl.cu) are what torch.optim's fused=True runs: the whole update of
// every parameter of a list in one multi-tensor kernel, one pass over p, g, m and v. 1.13's headers have
// _fused_adam_ only (/usr/include/ATen/ops/_fused_adam.h); both are used from 2.1 on, which has both.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define CONVREP_FUSED_ADAM 1
#endif
// Their overloads taking the learning rate as a float tensor on the parameters' device (pytorch PR 106916, in
// 2.2; FusedAdamWKernel.cu reads it with const_data_ptr<float>), what torch.optim's capturable fused Adam
// passes: the update a CUDA graph replays reads its rate there. Used from 2.3 on, clear of the release it
// landed in.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define CONVREP_FUSED_ADAM_TENSOR_LR 1
#endif

using convrep::tensor;

namespace {

// lerp_ over lists: self[i] += weight·(end[i] − self[i]), with libtorch's lerp formula in both cases.
void foreach_lerp_(std::vector<at::Tensor> &self, const std::vector<at::Tensor> &end, double weight) {
#ifdef CONVREP_FOREACH_LERP
  at::_foreach_lerp_(self, end, at::Scalar(weight));
#else
  for (size_t k = 0; k < self.size(); k++) self[k].lerp_(end[k], weight);
#endif
}

// Each tensor of a list times, over or plus a 0-dim tensor x. The _foreach_ overloads taking a Tensor are in
// libtorch from 2.3 on (native_functions.yaml: _foreach_mul_.Tensor, _foreach_div_.Tensor, _foreach_add_.Tensor);
// before, one op per tensor.
void foreach_mul_(std::vector<at::Tensor> &self, const at::Tensor &x) {
#ifdef CONVREP_FOREACH_TENSOR
  at::_foreach_mul_(self, x);
#else
  for (auto &t : self) t.mul_(x);
#endif
}

void foreach_div_(std::vector<at::Tensor> &self, const at::Tensor &x) {
#ifdef CONVREP_FOREACH_TENSOR
  at::_foreach_div_(self, x);
#else
  for (auto &t : self) t.div_(x);
#endif
}

void foreach_add_(std::vector<at::Tensor> &self, const at::Tensor &x) {
#ifdef CONVREP_FOREACH_TENSOR
  at::_foreach_add_(self, x);
#else
  for (auto &t : self) t.add_(x);
#endif
}

// The whole update of one contiguous CPU parameter in one pass over its arrays, the per-tensor path's
// arithmetic element by element: p·decay; g + l2·p (Adam); both moments as libtorch's lerp (from self for a
// weight below ½, else from end: aten/src/ATen/native/Lerp.h); d = √v/denom + eps; p + m/d. Per tensor that is
// about seventeen passes over parameter-sized arrays; here it reads p, g, m and v once and writes p, m and v
// once, which is what the CPU's memory bandwidth limits (a 30,522 × 768 embedding is 94 MB). To keep the
// per-tensor path's bits nothing is contracted into a fused multiply-add (fp-contract=off) except the lerps,
// where libtorch's own lerp kernel is one: its AVX2 and AVX-512 builds are compiled with FMA, so update_fma,
// for those, computes them as FMAs. update_fma runs float parameters 8 lanes at a time with AVX2 intrinsics
// (the package is compiled at O1 for any x86-64, which vectorises nothing; 3.3 times faster than the
// per-tensor kernels on a 4-layer BERT's 11 million parameters: go test ./trainer/optim -bench Step/bert-L4);
// each lane's operation is correctly rounded, so the bits are the scalar loop's. The rest is scalar, with the
// builtins, which unlike std::sqrt and std::fma become single instructions here.
struct Update {
  bool has_decay, has_l2, move;
  double decay, l2, w1, w2, denom, eps;
};

#define CONVREP_ADAM_LOOP(T, SQRT, LERP)                                                                       \
  const T decay = static_cast<T>(u.decay), l2 = static_cast<T>(u.l2), w1 = static_cast<T>(u.w1),             \
          w2 = static_cast<T>(u.w2), denom = static_cast<T>(u.denom), eps = static_cast<T>(u.eps);          \
  for (int64_t i = begin; i < end; i++) {                                                                    \
    T pi = p[i], gi = g[i];                                                                                  \
    if (u.has_decay) pi = pi * decay;                                                                        \
    if (u.has_l2) {                                                                                          \
      T t = pi * l2;                                                                                         \
      gi = t + gi;                                                                                           \
    }                                                                                                        \
    T mi = LERP(m[i], gi, w1);                                                                               \
    T sq = gi * gi;                                                                                          \
    T vi = LERP(v[i], sq, w2);                                                                               \
    m[i] = mi;                                                                                               \
    v[i] = vi;                                                                                               \
    if (u.move) {                                                                                            \
      T d = SQRT(vi) / denom;                                                                                \
      d = d + eps;                                                                                           \
      pi = pi + mi / d;                                                                                      \
    }                                                                                                        \
    p[i] = pi;                                                                                               \
  }

#define CONVREP_LERP(self, end, w) ((w) < 0.5 && (w) > -0.5 ? (self) + (w) * ((end) - (self)) : (end) - ((end) - (self)) * (1 - (w)))
#define CONVREP_LERP_FMA(self, end, w, FMA)                                                                    \
  ((w) < 0.5 && (w) > -0.5 ? FMA((w), (end) - (self), (self)) : FMA(-((end) - (self)), 1 - (w), (end)))
#define CONVREP_LERP_FMAF(self, end, w) CONVREP_LERP_FMA(self, end, w, __builtin_fmaf)
#define CONVREP_LERP_FMAD(self, end, w) CONVREP_LERP_FMA(self, end, w, __builtin_fma)

#pragma GCC push_options
#pragma GCC optimize("O3", "no-math-errno", "fp-contract=off")
void update_plain(float *p, const float *g, float *m, float *v, const Update &u, int64_t begin, int64_t end) {
  CONVREP_ADAM_LOOP(float, __builtin_sqrtf, CONVREP_LERP)
}
void update_plain(double *p, const double *g, double *m, double *v, const Update &u, int64_t begin, int64_t end) {
  CONVREP_ADAM_LOOP(double, __builtin_sqrt, CONVREP_LERP)
}
#pragma GCC target("avx2,fma")
void update_fma_scalar(float *p, const float *g, float *m, float *v, const Update &u, int64_t begin, int64_t end) {
  CONVREP_ADAM_LOOP(float, __builtin_sqrtf, CONVREP_LERP_FMAF)
}

// lerp8 is CONVREP_LERP_FMAF on 8 floats (the weight's side chosen once, outside the loop).
inline __m256 lerp8(__m256 self, __m256 end, __m256 w, __m256 one_minus_w, bool small) {
  __m256 diff = _mm256_sub_ps(end, self);
  return small ? _mm256_fmadd_ps(w, diff, self) : _mm256_fnmadd_ps(diff, one_minus_w, end);
}

// update_fma on floats: the loop 8 lanes at a time with AVX2 (the same operations, each correctly rounded
// per lane, so the same bits), the rest one at a time.
void update_fma(float *p, const float *g, float *m, float *v, const Update &u, int64_t begin, int64_t end) {
  const float w1 = static_cast<float>(u.w1), w2 = static_cast<float>(u.w2);
  const bool small1 = w1 < 0.5f && w1 > -0.5f, small2 = w2 < 0.5f && w2 > -0.5f;
  const __m256 decay = _mm256_set1_ps(static_cast<float>(u.decay)), l2 = _mm256_set1_ps(static_cast<float>(u.l2)),
               vw1 = _mm256_set1_ps(w1), vw2 = _mm256_set1_ps(w2), omw1 = _mm256_set1_ps(1.0f - w1),
               omw2 = _mm256_set1_ps(1.0f - w2), denom = _mm256_set1_ps(static_cast<float>(u.denom)),
               eps = _mm256_set1_ps(static_cast<float>(u.eps));
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 pi = _mm256_loadu_ps(p + i), gi = _mm256_loadu_ps(g + i);
    if (u.has_decay) pi = _mm256_mul_ps(pi, decay);
    if (u.has_l2) gi = _mm256_add_ps(_mm256_mul_ps(pi, l2), gi);
    __m256 mi = lerp8(_mm256_loadu_ps(m + i), gi, vw1, omw1, small1);
    __m256 vi = lerp8(_mm256_loadu_ps(v + i), _mm256_mul_ps(gi, gi), vw2, omw2, small2);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    if (u.move) {
      __m256 d = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), denom), eps);
      pi = _mm256_add_ps(pi, _mm256_div_ps(mi, d));
    }
    _mm256_storeu_ps(p + i, pi);
  }
  update_fma_scalar(p, g, m, v, u, i, end);
}
void update_fma(double *p, const double *g, double *m, double *v, const Update &u, int64_t begin, int64_t end) {
  CONVREP_ADAM_LOOP(double, __builtin_sqrt, CONVREP_LERP_FMAD)
}
#pragma GCC pop_options

// libtorch_uses_fma is whether libtorch runs its AVX2 (or AVX-512) kernels, as its dispatch decides
// (aten/src/ATen/native/DispatchStub.cpp, compute_cpu_capability, which libtorch does not export): the
// ATEN_CPU_CAPABILITY variable when set, else the CPU's AVX2 and FMA.
bool libtorch_uses_fma() {
  const char *env = std::getenv("ATEN_CPU_CAPABILITY");
  if (env != nullptr && std::strcmp(env, "default") == 0) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

template <typename T> void fused_update(T *p, const T *g, T *m, T *v, int64_t n, const Update &u) {
  static const bool fma = libtorch_uses_fma();
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    if (fma) {
      update_fma(p, g, m, v, u, begin, end);
    } else {
      update_plain(p, g, m, v, u, begin, end);
    }
  });
}

// fusable: the parameter and its state are contiguous CPU tensors of one floating dtype.
bool fusable(const at::Tensor &p, const at::Tensor &g, const at::Tensor &m, const at::Tensor &v) {
  auto t = p.scalar_type();
  return p.is_cpu() && (t == at::kFloat || t == at::kDouble) && p.is_contiguous() && g.is_contiguous() &&
         m.is_contiguous() && v.is_contiguous() && g.scalar_type() == t && m.scalar_type() == t &&
         v.scalar_type() == t;
}

bool fused_device_available() {
#ifdef CONVREP_FUSED_ADAM
  return true;
#else
  return false;
#endif
}

bool fused_device_coef_available() {
#ifdef CONVREP_FUSED_ADAM_TENSOR_LR
  return true;
#else
  return false;
#endif
}

// One update of the parameters index names with libtorch's _fused_adamw_ (AdamW) or _fused_adam_ (Adam, its
// weight decay the L2 term), which take the plain hyperparameters and each parameter's step as a float tensor
// on its device, read there after torch.optim's increment (torch/optim/adam.py, _fused_adam): the kernels
// compute bias corrections from it. Parameters at the same step share one such tensor, filled here by a
// kernel launch with the step as its argument (no copy from the host, no wait). The arithmetic is torch's
// (adam.go's formulas); the rounding is the fused kernel's, not the foreach ops'.
//
// With device scalars (a CUDA graph's step), lr and step are defined: the group's coef row's elements 3 and 4,
// which LoadScalars (trainer/optim/graphed.go) writes before each step or replay, so that nothing the host knows
// at capture is baked into the graph. Every parameter takes that one step tensor (the group's parameters are at
// one step), and the learning rate goes to the kernels' tensor overloads.
void fused_device_step(const std::vector<int> &index, const std::vector<at::Tensor> &grads, void **data,
                       void **exp_avg, void **exp_avg_sq, int64_t *steps, const convrep_adam_hyper &h,
                       const at::Tensor &lr, const at::Tensor &step) {
  if (lr.defined() && !fused_device_coef_available())
    throw std::runtime_error("adam step: the fused device kernels with device scalars (_fused_adamw_ with a tensor "
                             "learning rate) need libtorch 2.3 or later");
  if (!fused_device_available())
    throw std::runtime_error("adam step: the fused device kernels (_fused_adamw_) need libtorch 2.1 or later");
#ifdef CONVREP_FUSED_ADAM
  std::vector<at::Tensor> p, g, m, v, st;
  std::vector<std::pair<int64_t, at::Tensor>> made; // step → its tensor, few distinct steps per group
  for (size_t k = 0; k < index.size(); k++) {
    int i = index[k];
    int64_t t = ++steps[i];
    at::Tensor s = step;
    for (auto &e : made) {
      if (!s.defined() && e.first == t && e.second.device() == tensor(data[i]).device()) s = e.second;
    }
    if (!s.defined()) {
      s = at::full({}, static_cast<double>(t), tensor(data[i]).options().dtype(at::kFloat));
      made.emplace_back(t, s);
    }
    p.push_back(tensor(data[i]));
    g.push_back(grads[k]);
    m.push_back(tensor(exp_avg[i]));
    v.push_back(tensor(exp_avg_sq[i]));
    st.push_back(s);
  }
  std::vector<at::Tensor> none; // max_exp_avg_sqs: amsgrad is off
#ifdef CONVREP_FUSED_ADAM_TENSOR_LR
  if (lr.defined()) {
    if (h.adamw) {
      at::_fused_adamw_(p, g, m, v, none, st, lr, h.beta1, h.beta2, h.weight_decay, h.eps, false, false);
    } else {
      at::_fused_adam_(p, g, m, v, none, st, lr, h.beta1, h.beta2, h.weight_decay, h.eps, false, false);
    }
    return;
  }
#endif
  if (h.adamw) {
    at::_fused_adamw_(p, g, m, v, none, st, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps, false, false);
  } else {
    at::_fused_adam_(p, g, m, v, none, st, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps, false, false);
  }
#else
  (void)index, (void)grads, (void)data, (void)exp_avg, (void)exp_avg_sq, (void)steps, (void)h, (void)step;
#endif
}

std::string mismatch(const at::Tensor &g, const at::Tensor &p) {
  std::ostringstream s;
  s << "gradient " << g.scalar_type() << g.sizes() << " on " << g.device() << " does not match the parameter "
    << p.scalar_type() << p.sizes() << " on " << p.device();
  return s.str();
}

} // namespace

// The arithmetic is trainer/optim's (adam.go explains it): both moments with lerp_, the step size folded
// into the denominator, d = √v/denom_scale + eps_scale, then p += m/d.
//
// Per tensor, each parameter goes through all the ops before the next, g² and d written into its scratch view
// (one buffer for the largest parameter, shared): nothing is allocated, which matters on the CPU, where a large
// temporary comes back as fresh pages every step.
//
// Foreach, each op runs over the whole group at once: _foreach_* ops launch a few multi-tensor kernels on a GPU
// where per-tensor ops launch one kernel per parameter (aten/src/ATen/native/cuda/ForeachBinaryOpScalar.cu and
// its siblings); g² and d are temporaries as large as the group, from the caching allocator. On the CPU a
// _foreach_ op runs the per-tensor op on each tensor in turn (foreach_tensor_*_slow in
// aten/src/ATen/native/ForeachOpsKernels.cpp), so both ways give the same bits there.
char *convrep_adam_step(int n, void **params, void **data, void **scratch, void **exp_avg, void **exp_avg_sq,
                        int64_t *steps, const double *denom_scale, const double *eps_scale, double beta1_weight,
                        double beta2_weight, int has_decay, double decay, int has_l2, double l2, int move_params,
                        int kernels, void *coef, const convrep_adam_hyper *hyper_ptr, int *bad) {
  const convrep_adam_hyper &hyper = *hyper_ptr;
  *bad = -1;
  int current = -1;
  try {
    // Every gradient is checked before anything changes: an error about one leaves the group as it was.
    std::vector<int> index;
    std::vector<at::Tensor> grads;
    for (int i = 0; i < n; i++) {
      current = i;
      const at::Tensor &g = tensor(params[i]).grad();
      if (!g.defined()) continue; // no gradient: torch skips the parameter and leaves its state alone
      if (g.is_sparse()) throw std::runtime_error("sparse gradients are not supported");
      const at::Tensor &p = tensor(data[i]);
      if (g.sizes() != p.sizes() || g.scalar_type() != p.scalar_type() || g.device() != p.device())
        throw std::runtime_error(mismatch(g, p));
      index.push_back(i);
      grads.push_back(g);
    }
    if (index.empty()) return nullptr;
    // With coef, decay and the folded terms are read on the device from coef = [decay, denom, eps, lr, step], as
    // a CUDA graph's replays need (the host's scalars would be baked into the graph): one set for the group, so
    // all its updated parameters must be at the same step. The fused kernels read lr and step, the others the
    // first three.
    at::Tensor c, c_decay, c_denom, c_eps;
    if (coef != nullptr) {
      c = tensor(coef);
      if (c.dim() != 1 || c.size(0) != 5 || c.scalar_type() != tensor(data[index[0]]).scalar_type())
        throw std::runtime_error("adam step: coef must be a [5] tensor of the parameters' dtype");
      c_decay = c.select(0, 0);
      c_denom = c.select(0, 1);
      c_eps = c.select(0, 2);
      for (int i : index) {
        current = i;
        if (steps[i] != steps[index[0]])
          throw std::runtime_error("adam step: the group's parameters are at different steps, which one set of "
                                   "device scalars cannot update (CUDA graphs)");
      }
    }
    for (int i : index) {
      current = i;
      if (exp_avg[i] == nullptr) exp_avg[i] = new at::Tensor(at::zeros_like(tensor(data[i])));
      if (exp_avg_sq[i] == nullptr) exp_avg_sq[i] = new at::Tensor(at::zeros_like(tensor(data[i])));
    }
    bool on_gpu = tensor(data[index[0]]).is_cuda();
    if (c.defined() && (kernels == 4 || (kernels == 0 && on_gpu && c.scalar_type() == at::kFloat &&
                                          fused_device_coef_available()))) {
      fused_device_step(index, grads, data, exp_avg, exp_avg_sq, steps, hyper, c.select(0, 3), c.select(0, 4));
      return nullptr;
    }
    if (kernels == 4 || (kernels == 0 && on_gpu && !c.defined() && fused_device_available())) {
      fused_device_step(index, grads, data, exp_avg, exp_avg_sq, steps, hyper, at::Tensor(), at::Tensor());
      return nullptr;
    }
    bool foreach = kernels == 2 || (kernels == 0 && !tensor(data[index[0]]).is_cpu());
    if (kernels == 3 || (kernels == 0 && tensor(data[index[0]]).is_cpu())) {
      // Fused, one pass per parameter (a parameter that is not fusable goes per tensor below).
      double cd = decay, cden = 1, ceps = 0;
      if (c.defined()) {
        at::Tensor h = c.to(at::kDouble).cpu();
        cd = h[0].item<double>(), cden = h[1].item<double>(), ceps = h[2].item<double>();
      }
      std::vector<int> rest;
      std::vector<at::Tensor> rest_grads;
      for (size_t k = 0; k < index.size(); k++) {
        int i = current = index[k];
        at::Tensor &p = tensor(data[i]), &m = tensor(exp_avg[i]), &v = tensor(exp_avg_sq[i]);
        const at::Tensor &g = grads[k];
        if (!fusable(p, g, m, v)) {
          rest.push_back(i);
          rest_grads.push_back(g);
          continue;
        }
        steps[i]++;
        bool move = c.defined() || move_params;
        double den = c.defined() ? cden : denom_scale[i], ep = c.defined() ? ceps : eps_scale[i];
        Update u{static_cast<bool>(has_decay), static_cast<bool>(has_l2), move, cd, l2, beta1_weight, beta2_weight, den, ep};
        if (p.scalar_type() == at::kFloat) {
          fused_update<float>(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
                              p.numel(), u);
        } else {
          fused_update<double>(p.data_ptr<double>(), g.data_ptr<double>(), m.data_ptr<double>(),
                               v.data_ptr<double>(), p.numel(), u);
        }
      }
      index.swap(rest);
      grads.swap(rest_grads);
      if (index.empty()) return nullptr;
      foreach = false;
    }
    if (!foreach) {
      for (size_t k = 0; k < index.size(); k++) {
        int i = current = index[k];
        steps[i]++;
        at::Tensor &p = tensor(data[i]), &m = tensor(exp_avg[i]), &v = tensor(exp_avg_sq[i]);
        at::Tensor g = grads[k];
        if (has_decay) {
          if (c.defined()) {
            p.mul_(c_decay);
          } else {
            p.mul_(decay);
          }
        }
        if (has_l2) {
          at::Tensor t = at::mul(p, l2);
          t.add_(g);
          g = t;
        }
        m.lerp_(g, beta1_weight);
        at::Tensor s = scratch != nullptr && scratch[i] != nullptr ? tensor(scratch[i]) : at::Tensor();
        if (s.defined()) {
          at::mul_out(s, g, g);
        } else {
          s = at::mul(g, g);
        }
        v.lerp_(s, beta2_weight);
        if (c.defined()) { // at learning rate 0 the host sets denom 1 and eps +inf: m/d is 0
          at::sqrt_out(s, v);
          s.div_(c_denom);
          s.add_(c_eps);
          p.addcdiv_(m, s);
          continue;
        }
        if (!move_params) continue; // torch adds m/d times −0; the folded form would divide by zero
        at::sqrt_out(s, v);
        s.div_(denom_scale[i]);
        s.add_(eps_scale[i]);
        p.addcdiv_(m, s);
      }
      return nullptr;
    }
    current = -1;
    std::vector<at::Tensor> p, m, v;
    std::vector<at::Scalar> denom, eps;
    for (int i : index) {
      steps[i]++;
      p.push_back(tensor(data[i]));
      m.push_back(tensor(exp_avg[i]));
      v.push_back(tensor(exp_avg_sq[i]));
      denom.emplace_back(denom_scale[i]);
      eps.emplace_back(eps_scale[i]);
    }
    if (has_decay) {
      if (c.defined()) {
        foreach_mul_(p, c_decay);
      } else {
        at::_foreach_mul_(p, at::Scalar(decay));
      }
    }
    if (has_l2) {
      std::vector<at::Tensor> t = at::_foreach_mul(p, at::Scalar(l2));
      at::_foreach_add_(t, grads);
      grads = std::move(t);
    }
    foreach_lerp_(m, grads, beta1_weight);
    {
      std::vector<at::Tensor> sq = at::_foreach_mul(grads, grads);
      foreach_lerp_(v, sq, beta2_weight);
    } // g² goes back to the allocator before d is made
    if (c.defined()) {
      std::vector<at::Tensor> d = at::_foreach_sqrt(v);
      foreach_div_(d, c_denom);
      foreach_add_(d, c_eps);
      at::_foreach_addcdiv_(p, m, d);
    } else if (move_params) {
      std::vector<at::Tensor> d = at::_foreach_sqrt(v);
      at::_foreach_div_(d, denom);
      at::_foreach_add_(d, eps);
      at::_foreach_addcdiv_(p, m, d);
    }
  } catch (const std::exception &e) {
    *bad = current;
    return strdup(e.what());
  }
  return nullptr;
}

// As torch's zero_grad(set_to_none=False): every defined gradient zeroed in place, in one _foreach_zero_.
char *convrep_zero_grads(int n, void **params) {
  try {
    std::vector<at::Tensor> grads;
    for (int i = 0; i < n; i++) {
      const at::Tensor &g = tensor(params[i]).grad();
      if (g.defined()) grads.push_back(g);
    }
    if (!grads.empty()) at::_foreach_zero_(grads);
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}

int convrep_fused_adam_compiled(void) { return fused_device_available() ? 1 : 0; }

int convrep_fused_adam_coef_compiled(void) { return fused_device_coef_available() ? 1 : 0; }
