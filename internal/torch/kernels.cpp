//go:build !convrep_nokernels

#include "kernels.h"
#include "handles.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifdef CONVREP_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>
#endif

// convrep's fused kernels (internal/gpu/kernels, whose doc says what each computes and its launch contract) run
// here as two autograd ops: dropout + residual + LayerNorm, and bias + GELU after a GEMM. The program is PTX
// that internal/gpu/nvrtc compiled for this GPU; it is loaded and launched with the CUDA driver API, opened with
// dlopen, as PyTorch's jiterator does (aten/src/ATen/native/cuda/jit_utils.cpp), so nothing here links against
// libcuda. Launches go on libtorch's current stream, so they order with libtorch's own kernels and are
// captured into CUDA graphs like them. Where a condition of the kernels does not hold (a dtype other than
// float32 and bfloat16, a row too wide), the ops run libtorch's composite instead.

using convrep::error_of, convrep::handle, convrep::tensor;

namespace {

// The composites the kernels replace, with libtorch's ops: what runs where the kernels cannot.
at::Tensor drop_add_layer_norm_composite(const at::Tensor &x, const at::Tensor &resid, const at::Tensor &gamma,
                                         const at::Tensor &beta, double p, double eps) {
  at::Tensor s = at::add(p > 0 ? at::dropout(x, p, true) : x, resid);
  if (s.scalar_type() != gamma.scalar_type()) s = s.to(gamma.scalar_type());
  return at::layer_norm(s, {s.size(-1)}, gamma, beta, eps);
}

// The embeddings as models/embeddings.go computes them: the lookups added (word + position, then the token
// type), LayerNorm, dropout.
at::Tensor embed_layer_norm_composite(const at::Tensor &word, const at::Tensor &pos, const at::Tensor &type,
                                      const at::Tensor &ids, const at::Tensor &pos_ids, const at::Tensor &type_ids,
                                      const at::Tensor &gamma, const at::Tensor &beta, double p, double eps) {
  at::Tensor s = at::add(at::embedding(word, ids), at::embedding(pos, pos_ids));
  if (type.defined()) s = at::add(s, at::embedding(type, type_ids));
  at::Tensor y = at::layer_norm(s, {s.size(-1)}, gamma, beta, eps);
  return p > 0 ? at::dropout(y, p, true) : y;
}

at::Tensor dense_bias_gelu_composite(const at::Tensor &x, const at::Tensor &w, const at::Tensor &bias) {
  return at::gelu(at::linear(x, w, bias.scalar_type() == x.scalar_type() ? bias : bias.to(x.scalar_type())));
}

#ifdef CONVREP_CUDA
// The few driver API entry points used, by their C signatures (cuda.h), resolved from libcuda.so.1 once.
using drv_result = int;
using drv_device = int;
using drv_context = void *;
using drv_module = void *;
using drv_function = void *;
using drv_stream = void *;

struct Driver {
  drv_result (*init)(unsigned int);
  drv_result (*device_get)(drv_device *, int);
  drv_result (*primary_ctx_retain)(drv_context *, drv_device);
  drv_result (*ctx_set_current)(drv_context);
  drv_result (*module_load_data)(drv_module *, const void *);
  drv_result (*module_get_function)(drv_function *, drv_module, const char *);
  drv_result (*launch_kernel)(drv_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            drv_stream, void **, void **);
  drv_result (*get_error_string)(drv_result, const char **);
  drv_result (*max_active_blocks)(int *, drv_function, int, size_t);
};

const Driver &driver() {
  static Driver d = [] {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) throw std::runtime_error(std::string("fused kernels: cannot open libcuda.so.1: ") + dlerror());
    Driver d{};
    auto sym = [lib](const char *name) {
      void *f = dlsym(lib, name);
      if (f == nullptr) throw std::runtime_error(std::string("fused kernels: libcuda.so.1 has no ") + name);
      return f;
    };
    d.init = reinterpret_cast<decltype(d.init)>(sym("cuInit"));
    d.device_get = reinterpret_cast<decltype(d.device_get)>(sym("cuDeviceGet"));
    d.primary_ctx_retain = reinterpret_cast<decltype(d.primary_ctx_retain)>(sym("cuDevicePrimaryCtxRetain"));
    d.ctx_set_current = reinterpret_cast<decltype(d.ctx_set_current)>(sym("cuCtxSetCurrent"));
    d.module_load_data = reinterpret_cast<decltype(d.module_load_data)>(sym("cuModuleLoadData"));
    d.module_get_function = reinterpret_cast<decltype(d.module_get_function)>(sym("cuModuleGetFunction"));
    d.launch_kernel = reinterpret_cast<decltype(d.launch_kernel)>(sym("cuLaunchKernel"));
    d.get_error_string = reinterpret_cast<decltype(d.get_error_string)>(sym("cuGetErrorString"));
    d.max_active_blocks =
        reinterpret_cast<decltype(d.max_active_blocks)>(sym("cuOccupancyMaxActiveBlocksPerMultiprocessor"));
    return d;
  }();
  return d;
}

void check(drv_result r, const char *what) {
  if (r == 0) return;
  const char *msg = nullptr;
  driver().get_error_string(r, &msg);
  throw std::runtime_error(std::string("fused kernels: ") + what + ": " + (msg != nullptr ? msg : "CUDA error") +
                           " (" + std::to_string(r) + ")");
}

// The kernels of one dtype: T is float (suffix _f32) or bfloat16 bits (_bf16).
struct Entries {
  drv_function ln_fwd, ln_bwd, ln_fwd_warp, ln_bwd_warp, gelu_fwd, gelu_bwd;
  drv_function embed_fwd = nullptr, embed_bwd = nullptr; // float32 only
};

// What is loaded on one device: the runtime's primary context (libtorch's), where the module lives and which
// must be current on the calling thread when the driver API launches (Go runs calls on any thread).
struct Loaded {
  bool ok = false;
  drv_context ctx = nullptr;
  drv_module module = nullptr;
  Entries f32{}, bf16{};
  int sms = 0;
};

constexpr int kMaxDevices = 64;
std::mutex loading;
Loaded loaded[kMaxDevices];

const Loaded *loaded_on(const at::Tensor &t) {
  if (!t.is_cuda()) return nullptr;
  int d = t.device().index();
  if (d < 0 || d >= kMaxDevices || !loaded[d].ok) return nullptr;
  return &loaded[d];
}

const Entries *entries_for(const Loaded &l, at::ScalarType t) {
  if (t == at::kFloat) return &l.f32;
  if (t == at::kBFloat16) return &l.bf16;
  return nullptr;
}

// A kernel's arguments as cuLaunchKernel takes them: an array of pointers to each value.
struct Args {
  uint64_t slot[24];
  void *ptr[24];
  int n = 0;
  template <typename V> Args &operator<<(V v) {
    static_assert(sizeof(V) <= sizeof(uint64_t), "kernel argument too large");
    if (n == 24) throw std::runtime_error("fused kernels: too many arguments");
    slot[n] = 0;
    std::memcpy(&slot[n], &v, sizeof(V));
    ptr[n] = &slot[n];
    n++;
    return *this;
  }
};

void launch(const Loaded &l, const at::Tensor &on, drv_function f, unsigned grid, unsigned block, Args &a) {
  const Driver &d = driver();
  check(d.ctx_set_current(l.ctx), "cuCtxSetCurrent");
  drv_stream s = reinterpret_cast<drv_stream>(c10::cuda::getCurrentCUDAStream(on.device().index()).stream());
  check(d.launch_kernel(f, grid, 1, 1, block, 1, 1, 0, s, a.ptr, nullptr), "cuLaunchKernel");
}

// Threads per block for rows of `cols` values: a thread keeps up to 4 chunks of 4 columns in registers
// (internal/gpu/kernels, CONVREP_MAX_CHUNKS_PER_LANE), so a block has the fewest whole warps that hold a row:
// 64 threads for BERT-base's 768, 192 for its 3072. 0 where a row is too wide for one block.
unsigned threads_for(int64_t cols) {
  constexpr int64_t kChunksPerThread = 4;
  int64_t chunks = (cols + 3) / 4;
  int64_t t = ((chunks + kChunksPerThread - 1) / kChunksPerThread + 31) / 32 * 32;
  return t > 1024 ? 0 : static_cast<unsigned>(t);
}

// The backward grid: as many blocks of `threads` as the GPU holds at once (the driver's occupancy for the
// kernel, times the SMs), at most `most`. Each block loops over its rows and keeps its columns' γ, β or bias
// sums in registers, so a grid that fills the GPU once reads every row at full occupancy and writes the fewest
// partial sums. The occupancy is asked once per kernel and block size.
int64_t backward_blocks(const Loaded &l, drv_function f, unsigned threads, int64_t most) {
  static std::mutex mu;
  static std::map<std::pair<drv_function, unsigned>, int64_t> per_sm;
  int64_t n;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = per_sm.find({f, threads});
    if (it == per_sm.end()) {
      int b = 0;
      check(driver().ctx_set_current(l.ctx), "cuCtxSetCurrent");
      check(driver().max_active_blocks(&b, f, static_cast<int>(threads), 0), "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      it = per_sm.emplace(std::make_pair(f, threads), std::max(b, 1)).first;
    }
    n = it->second;
  }
  return std::min<int64_t>(most, n * l.sms);
}

// How dropout + residual + LayerNorm runs on rows of `cols` values (internal/gpu/kernels' kernels.cu): a warp per
// row, kRowsPerBlock rows a block, where a row fits a warp (a lane keeps up to 6 chunks of four columns:
// CONVREP_WARP_CHUNKS_PER_LANE), else a block per row. The backward's partial sums are one row per warp of the
// grid, or per block.
constexpr int64_t kWarpRowCols = 6 * 4 * 32;
constexpr unsigned kRowsPerBlock = 4;

struct LNLaunch {
  drv_function fwd, bwd;
  unsigned threads;       // a block's
  int64_t rows_per_block; // 1, or kRowsPerBlock with a warp per row

  LNLaunch(const Entries &e, int64_t cols) {
    if (cols <= kWarpRowCols) {
      fwd = e.ln_fwd_warp, bwd = e.ln_bwd_warp, threads = 32 * kRowsPerBlock, rows_per_block = kRowsPerBlock;
    } else {
      fwd = e.ln_fwd, bwd = e.ln_bwd, threads = threads_for(cols), rows_per_block = 1;
    }
  }

  unsigned forward_grid(int64_t rows) const {
    return static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
  }
};

// The Philox key and counter base of one dropout, reserved from the device's default CUDA generator as
// libtorch's own dropout does (aten/src/ATen/native/cuda/Dropout.cu): `count` numbers of the offset. While a
// CUDA graph is being captured the generator gives pointers to its seed and offset, read by the kernel at
// each replay (at::cuda::philox::unpack's contract), with the offset within the graph by value.
struct Philox {
  uint64_t seed = 0, offset = 0;
  const int64_t *seed_ptr = nullptr, *offset_ptr = nullptr;
};

Philox philox(const at::Tensor &like, uint64_t count) {
  auto gen = at::cuda::detail::getDefaultCUDAGenerator(like.device().index());
  auto *impl = at::check_generator<at::CUDAGeneratorImpl>(gen);
  at::PhiloxCudaState st;
  {
    std::lock_guard<std::mutex> lock(impl->mutex_);
    st = impl->philox_cuda_state((count + 3) / 4 * 4);
  }
  Philox p;
  if (st.captured_) {
    p.seed_ptr = st.seed_.ptr;
    p.offset_ptr = st.offset_.ptr;
    p.offset = st.offset_intragraph_;
  } else {
    p.seed = st.seed_.val;
    p.offset = st.offset_.val;
  }
  return p;
}

Args &operator<<(Args &a, const Philox &p) { return a << p.seed << p.offset << p.seed_ptr << p.offset_ptr; }

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A dropout's probability and Philox numbers, kept in an op's context by forward for backward to draw the same
// mask.
void save_dropout(AutogradContext *ctx, double p, const Philox &ph) {
  ctx->saved_data["p"] = p;
  ctx->saved_data["seed"] = static_cast<int64_t>(ph.seed);
  ctx->saved_data["offset"] = static_cast<int64_t>(ph.offset);
  ctx->saved_data["seed_ptr"] = reinterpret_cast<int64_t>(ph.seed_ptr);
  ctx->saved_data["offset_ptr"] = reinterpret_cast<int64_t>(ph.offset_ptr);
}

Philox saved_philox(AutogradContext *ctx) {
  Philox ph;
  ph.seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
  ph.offset = static_cast<uint64_t>(ctx->saved_data["offset"].toInt());
  ph.seed_ptr = reinterpret_cast<const int64_t *>(ctx->saved_data["seed_ptr"].toInt());
  ph.offset_ptr = reinterpret_cast<const int64_t *>(ctx->saved_data["offset_ptr"].toInt());
  return ph;
}

float saved_p(AutogradContext *ctx) { return static_cast<float>(ctx->saved_data["p"].toDouble()); }

// LayerNorm(dropout(x) + resid): the forward kernel writes the output, the sum (saved for backward) and each
// row's mean and 1/σ; backward regenerates the mask from the same Philox numbers. γ and β's gradients are
// per-block partial sums, added here over the blocks.
struct DropAddLayerNorm : public torch::autograd::Function<DropAddLayerNorm> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, const at::Tensor &resid,
                            const at::Tensor &gamma, const at::Tensor &beta, double p, double eps) {
    const Loaded &l = *loaded_on(x);
    const Entries &e = *entries_for(l, x.scalar_type());
    int64_t cols = x.size(-1), rows = x.numel() / cols;
    at::Tensor out = at::empty_like(x), sum = at::empty_like(x);
    at::Tensor mean = at::empty({rows}, x.options().dtype(at::kFloat)), rstd = at::empty_like(mean);
    Philox ph = p > 0 ? philox(x, static_cast<uint64_t>(x.numel())) : Philox{};
    Args a;
    a << x.data_ptr() << resid.data_ptr() << gamma.data_ptr() << beta.data_ptr() << out.data_ptr() << sum.data_ptr()
      << mean.data_ptr() << rstd.data_ptr() << static_cast<int>(rows) << static_cast<int>(cols)
      << static_cast<float>(p) << static_cast<float>(eps) << ph;
    const LNLaunch how(e, cols);
    launch(l, x, how.fwd, how.forward_grid(rows), how.threads, a);
    ctx->save_for_backward({sum, mean, rstd, gamma});
    save_dropout(ctx, p, ph);
    return out;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &sum = saved[0], &mean = saved[1], &rstd = saved[2], &gamma = saved[3];
    const Loaded &l = *loaded_on(sum);
    const Entries &e = *entries_for(l, sum.scalar_type());
    at::Tensor dy = grads[0].to(sum.scalar_type()).contiguous();
    int64_t cols = sum.size(-1), rows = sum.numel() / cols;
    const LNLaunch how(e, cols);
    int64_t blocks = backward_blocks(l, how.bwd, how.threads, how.forward_grid(rows));
    at::Tensor dx = at::empty_like(sum), dresid = at::empty_like(sum);
    at::Tensor dgamma = at::empty({blocks * how.rows_per_block, cols}, sum.options().dtype(at::kFloat));
    at::Tensor dbeta = at::empty_like(dgamma);
    const Philox ph = saved_philox(ctx);
    Args a;
    a << dy.data_ptr() << sum.data_ptr() << mean.data_ptr() << rstd.data_ptr() << gamma.data_ptr() << dx.data_ptr()
      << dresid.data_ptr() << dgamma.data_ptr() << dbeta.data_ptr() << static_cast<int>(rows) << static_cast<int>(cols)
      << saved_p(ctx) << ph;
    launch(l, sum, how.bwd, static_cast<unsigned>(blocks), how.threads, a);
    return {dx, dresid, dgamma.sum(0), dbeta.sum(0), at::Tensor(), at::Tensor()};
  }
};

// gelu(x + bias), the erf GELU, from the GEMM's output x; backward recomputes gelu' from x and bias.
struct BiasGELU : public torch::autograd::Function<BiasGELU> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, const at::Tensor &bias) {
    const Loaded &l = *loaded_on(x);
    const Entries &e = *entries_for(l, x.scalar_type());
    int64_t cols = x.size(-1), rows = x.numel() / cols;
    at::Tensor out = at::empty_like(x);
    Args a;
    a << x.data_ptr() << bias.data_ptr() << out.data_ptr() << static_cast<int>(rows) << static_cast<int>(cols);
    launch(l, x, e.gelu_fwd, static_cast<unsigned>(rows), threads_for(cols), a);
    ctx->save_for_backward({x, bias});
    return out;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &bias = saved[1];
    const Loaded &l = *loaded_on(x);
    const Entries &e = *entries_for(l, x.scalar_type());
    at::Tensor dy = grads[0].to(x.scalar_type()).contiguous();
    int64_t cols = x.size(-1), rows = x.numel() / cols;
    int64_t blocks = backward_blocks(l, e.gelu_bwd, threads_for(cols), rows);
    at::Tensor dx = at::empty_like(x), dbias = at::empty({blocks, cols}, x.options().dtype(at::kFloat));
    Args a;
    a << x.data_ptr() << bias.data_ptr() << dy.data_ptr() << dx.data_ptr() << dbias.data_ptr() << static_cast<int>(rows)
      << static_cast<int>(cols);
    launch(l, x, e.gelu_bwd, static_cast<unsigned>(blocks), threads_for(cols), a);
    return {dx, dbias.sum(0)};
  }
};

// dropout(LayerNorm(word[ids] + pos[pos_ids] + type[type_ids])), a warp a row: the forward kernel writes the
// output and each row's mean and 1/σ; backward gathers the sum again, regenerates the mask, and gives the sum's
// gradient, which libtorch's embedding backward adds into each table's rows (padding_idx -1, as the lookups
// are made). type and type_ids are undefined where the family has no token types.
struct EmbedLayerNorm : public torch::autograd::Function<EmbedLayerNorm> {
  static Args &tables(Args &a, const at::Tensor &word, const at::Tensor &pos, const at::Tensor &type,
                      const at::Tensor &ids, const at::Tensor &pos_ids, const at::Tensor &type_ids) {
    return a << word.data_ptr() << pos.data_ptr() << (type.defined() ? type.data_ptr() : nullptr) << ids.data_ptr()
             << pos_ids.data_ptr() << (type.defined() ? type_ids.data_ptr() : nullptr) << word.size(0) << pos.size(0)
             << (type.defined() ? type.size(0) : int64_t{0});
  }

  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &word, const at::Tensor &pos,
                            const at::Tensor &type, const at::Tensor &ids, const at::Tensor &pos_ids,
                            const at::Tensor &type_ids, const at::Tensor &gamma, const at::Tensor &beta, double p,
                            double eps) {
    const Loaded &l = *loaded_on(word);
    int64_t cols = word.size(1), rows = ids.numel();
    std::vector<int64_t> shape = ids.sizes().vec();
    shape.push_back(cols);
    at::Tensor out = at::empty(shape, word.options());
    at::Tensor mean = at::empty({rows}, word.options()), rstd = at::empty_like(mean);
    Philox ph = p > 0 ? philox(word, static_cast<uint64_t>(rows * cols)) : Philox{};
    Args a;
    tables(a, word, pos, type, ids, pos_ids, type_ids)
        << gamma.data_ptr() << beta.data_ptr() << out.data_ptr() << mean.data_ptr() << rstd.data_ptr()
        << static_cast<int>(rows) << static_cast<int>(cols) << static_cast<float>(p) << static_cast<float>(eps) << ph;
    launch(l, word, l.f32.embed_fwd, static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock),
           32 * kRowsPerBlock, a);
    ctx->save_for_backward({word, pos, type, ids, pos_ids, type_ids, mean, rstd, gamma});
    save_dropout(ctx, p, ph);
    return out;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &word = saved[0], &pos = saved[1], &type = saved[2], &ids = saved[3], &pos_ids = saved[4],
                     &type_ids = saved[5], &mean = saved[6], &rstd = saved[7], &gamma = saved[8];
    const Loaded &l = *loaded_on(word);
    at::Tensor dy = grads[0].to(at::kFloat).contiguous();
    int64_t cols = word.size(1), rows = ids.numel();
    int64_t blocks = backward_blocks(l, l.f32.embed_bwd, 32 * kRowsPerBlock, (rows + kRowsPerBlock - 1) / kRowsPerBlock);
    at::Tensor ds = at::empty({rows, cols}, word.options());
    at::Tensor dgamma = at::empty({blocks * kRowsPerBlock, cols}, word.options()), dbeta = at::empty_like(dgamma);
    const Philox ph = saved_philox(ctx);
    Args a;
    a << dy.data_ptr();
    tables(a, word, pos, type, ids, pos_ids, type_ids)
        << mean.data_ptr() << rstd.data_ptr() << gamma.data_ptr() << ds.data_ptr() << dgamma.data_ptr()
        << dbeta.data_ptr() << static_cast<int>(rows) << static_cast<int>(cols)
        << saved_p(ctx) << ph;
    launch(l, word, l.f32.embed_bwd, static_cast<unsigned>(blocks), 32 * kRowsPerBlock, a);
    // An id outside its table made its row NaN in forward (the kernel read row 0 instead); clamped, it adds that
    // NaN row's gradient to a row inside the table, where libtorch's backward would write outside it.
    auto table_grad = [&](const at::Tensor &table, const at::Tensor &rows_of) {
      at::Tensor inside = at::clamp(rows_of.reshape({-1}), 0, table.size(0) - 1);
      return at::embedding_dense_backward(ds, inside, table.size(0), -1, false);
    };
    return {table_grad(word, ids),
            table_grad(pos, pos_ids),
            type.defined() ? table_grad(type, type_ids) : at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            dgamma.sum(0),
            dbeta.sum(0),
            at::Tensor(),
            at::Tensor()};
  }
};

// Whether w is weights the kernels read per column of a row of cols values (γ, β, a bias): float32, contiguous,
// [cols], on like's device.
bool row_weights(const at::Tensor &w, const at::Tensor &like, int64_t cols) {
  return w.scalar_type() == at::kFloat && w.dim() == 1 && w.size(0) == cols && w.is_contiguous() &&
         w.device() == like.device();
}

// Whether the embeddings' kernels take these tables and ids: float32 tables of the same width (at most a warp's
// row, kWarpRowCols) and LayerNorm weights on a device where the kernels are loaded, int64 ids of one shape
// there, and sizes within int.
bool embed_fusable(const at::Tensor &word, const at::Tensor &pos, const at::Tensor &type, const at::Tensor &ids,
                   const at::Tensor &pos_ids, const at::Tensor &type_ids, const at::Tensor &gamma,
                   const at::Tensor &beta) {
  const Loaded *l = loaded_on(word);
  if (l == nullptr || word.dim() != 2) return false;
  const int64_t cols = word.size(1);
  auto table = [&](const at::Tensor &t) {
    return t.scalar_type() == at::kFloat && t.dim() == 2 && t.size(1) == cols && t.is_contiguous() &&
           t.device() == word.device();
  };
  auto index = [&](const at::Tensor &t) {
    return t.scalar_type() == at::kLong && t.sizes() == ids.sizes() && t.device() == word.device();
  };
  return cols > 0 && cols <= kWarpRowCols && table(word) && table(pos) && (!type.defined() || table(type)) &&
         index(ids) && index(pos_ids) && (!type.defined() || index(type_ids)) && row_weights(gamma, word, cols) &&
         row_weights(beta, word, cols) && ids.numel() > 0 && ids.numel() * cols < INT32_MAX;
}

// Whether the kernels take rows of x with weights w (γ, or the bias): loaded on x's device, x float32 or
// bfloat16, the weights float32 on the same device, rows narrow enough, and sizes within int.
bool fusable(const at::Tensor &x, const at::Tensor &w) {
  const Loaded *l = loaded_on(x);
  if (l == nullptr || entries_for(*l, x.scalar_type()) == nullptr || x.dim() == 0) return false;
  int64_t cols = x.size(-1);
  return cols > 0 && threads_for(cols) != 0 && x.numel() < INT32_MAX && row_weights(w, x, cols);
}
#endif

} // namespace

int convrep_kernels_compiled(void) {
#ifdef CONVREP_CUDA
  return 1;
#else
  return 0;
#endif
}

char *convrep_kernels_load(int device, const char *ptx) {
  try {
#ifdef CONVREP_CUDA
    if (device < 0 || device >= kMaxDevices) throw std::runtime_error("fused kernels: no such device");
    std::lock_guard<std::mutex> lock(loading);
    Loaded &l = loaded[device];
    if (l.ok) return nullptr;
    const Driver &d = driver();
    check(d.init(0), "cuInit");
    drv_device dev;
    check(d.device_get(&dev, device), "cuDeviceGet");
    check(d.primary_ctx_retain(&l.ctx, dev), "cuDevicePrimaryCtxRetain");
    check(d.ctx_set_current(l.ctx), "cuCtxSetCurrent");
    check(d.module_load_data(&l.module, ptx), "cuModuleLoadData (the PTX of internal/gpu/kernels)");
    auto get = [&](const char *name) {
      drv_function f;
      check(d.module_get_function(&f, l.module, name), name);
      return f;
    };
    auto entries = [&](const std::string &suffix) {
      auto of = [&](const char *kernel) { return get((kernel + suffix).c_str()); };
      return Entries{of("convrep_drop_add_ln_fwd"),      of("convrep_drop_add_ln_bwd"),
                     of("convrep_drop_add_ln_fwd_warp"), of("convrep_drop_add_ln_bwd_warp"),
                     of("convrep_bias_gelu_fwd"),        of("convrep_bias_gelu_bwd")};
    };
    l.f32 = entries("_f32");
    l.bf16 = entries("_bf16");
    l.f32.embed_fwd = get("convrep_embed_ln_drop_fwd_f32");
    l.f32.embed_bwd = get("convrep_embed_ln_drop_bwd_f32");
    l.sms = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device))->multiProcessorCount;
    l.ok = true;
    return nullptr;
#else
    (void)device, (void)ptx;
    throw std::runtime_error("fused kernels: this build has no CUDA");
#endif
  } catch (const std::exception &e) {
    return error_of(e);
  }
}

int convrep_compute_capability(int device, char **err) {
  *err = nullptr;
  try {
#ifdef CONVREP_CUDA
    const cudaDeviceProp *prop = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device));
    return prop->major * 10 + prop->minor;
#else
    (void)device;
    throw std::runtime_error("compute capability: this build has no CUDA");
#endif
  } catch (const std::exception &e) {
    *err = error_of(e);
  }
  return -1;
}

int convrep_kernels_loaded(int device) {
#ifdef CONVREP_CUDA
  std::lock_guard<std::mutex> lock(loading);
  return device >= 0 && device < kMaxDevices && loaded[device].ok ? 1 : 0;
#else
  (void)device;
  return 0;
#endif
}

char *convrep_drop_add_layer_norm(void *x_, void *resid_, void *gamma_, void *beta_, double p, double eps, void **out) {
  try {
    const at::Tensor &x = tensor(x_), &gamma = tensor(gamma_), &beta = tensor(beta_);
    at::Tensor resid = tensor(resid_);
#ifdef CONVREP_CUDA
    if (fusable(x, gamma) && row_weights(beta, x, x.size(-1)) && resid.sizes() == x.sizes() &&
        resid.device() == x.device()) {
      if (resid.scalar_type() != x.scalar_type()) resid = resid.to(x.scalar_type());
      *out = handle(DropAddLayerNorm::apply(x.contiguous(), resid.contiguous(), gamma, beta, p, eps));
      return nullptr;
    }
#endif
    *out = handle(drop_add_layer_norm_composite(x, resid, gamma, beta, p, eps));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_dense_bias_gelu(void *x_, void *w_, void *bias_, void **out) {
  try {
    const at::Tensor &x = tensor(x_), &w = tensor(w_), &bias = tensor(bias_);
#ifdef CONVREP_CUDA
    if (x.is_cuda() && loaded_on(x) != nullptr) {
      at::Tensor h = at::linear(x, w); // autocast's dtype, as the composite's GEMM
      if (fusable(h, bias)) {
        *out = handle(BiasGELU::apply(h.contiguous(), bias));
        return nullptr;
      }
      *out = handle(at::gelu(at::add(h, bias)));
      return nullptr;
    }
#endif
    *out = handle(dense_bias_gelu_composite(x, w, bias));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_embed_layer_norm(void *word_, void *pos_, void *type_, void *ids_, void *pos_ids_, void *type_ids_,
                               void *gamma_, void *beta_, double p, double eps, void **out) {
  try {
    const at::Tensor &word = tensor(word_), &pos = tensor(pos_), &ids = tensor(ids_), &pos_ids = tensor(pos_ids_);
    const at::Tensor &gamma = tensor(gamma_), &beta = tensor(beta_);
    at::Tensor type, type_ids;
    if (type_ != nullptr) type = tensor(type_), type_ids = tensor(type_ids_);
#ifdef CONVREP_CUDA
    if (embed_fusable(word, pos, type, ids, pos_ids, type_ids, gamma, beta)) {
      *out = handle(EmbedLayerNorm::apply(word, pos, type, ids.contiguous(), pos_ids.contiguous(),
                                          type.defined() ? type_ids.contiguous() : type_ids, gamma, beta, p, eps));
      return nullptr;
    }
#endif
    *out = handle(embed_layer_norm_composite(word, pos, type, ids, pos_ids, type_ids, gamma, beta, p, eps));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}
