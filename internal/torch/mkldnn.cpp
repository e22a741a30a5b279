#include "mkldnn.h"
#include "handles.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <vector>

using convrep::error_of, convrep::handle, convrep::tensor;

// ---- oneDNN's inner product called directly ----------------------------------------------------------------
//
// at::mkldnn_linear (libtorch 1.13) copies x into a oneDNN tensor, reorders the plain weight into the layout its
// inner product wants on every call, and copies the result out: three copies a linear (DNNL_VERBOSE=1 lists
// them). Where this build has oneDNN's C header and libtorch's process has its library (Debian's libtorch links
// libdnnl.so.2), the packed weight is instead reordered once into that layout, and the inner product reads x and
// writes its result in place, with the GELU as a post-op. The functions are looked up with dlsym in what libtorch
// loaded, so a libtorch without a shared oneDNN (PyTorch's own builds link it in, hidden) keeps the path above.
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define CONVREP_DNNL 1
#endif

#ifdef CONVREP_DNNL
namespace {
// The oneDNN C functions used (dnnl_ and each name), from the library libtorch loaded.
#define CONVREP_DNNL_FUNCTIONS(X)                                                                                       \
  X(engine_create) X(stream_create) X(stream_wait) X(stream_destroy) X(memory_desc_init_by_tag) X(memory_desc_get_size)                 \
  X(memory_desc_equal) X(inner_product_forward_desc_init) X(reorder_primitive_desc_create) X(primitive_desc_create)   \
  X(primitive_desc_query_md) X(primitive_desc_destroy) X(primitive_create) X(primitive_execute) X(primitive_destroy) \
  X(memory_create) X(memory_destroy) X(primitive_attr_create) X(primitive_attr_destroy)                               \
  X(primitive_attr_set_post_ops) X(post_ops_create) X(post_ops_destroy) X(post_ops_append_eltwise)                  \
  X(matmul_desc_init) X(memory_desc_init_by_strides) X(primitive_attr_set_output_scales) X(post_ops_append_binary)    \
  X(layer_normalization_forward_desc_init)

struct dnnl_api {
#define CONVREP_DNNL_FIELD(name) decltype(&dnnl_##name) name;
  CONVREP_DNNL_FUNCTIONS(CONVREP_DNNL_FIELD)
#undef CONVREP_DNNL_FIELD
  dnnl_engine_t engine = nullptr;
};

template <class F> bool dnnl_find(F &f, const char *name) {
  f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return f != nullptr;
}

// The API, or nullptr when a function is missing or the CPU engine cannot be made.
const dnnl_api *dnnl() {
  static const dnnl_api *api = []() -> const dnnl_api * {
    static dnnl_api a;
    bool ok = true;
#define CONVREP_DNNL_FIND(name) ok = ok && dnnl_find(a.name, "dnnl_" #name);
    CONVREP_DNNL_FUNCTIONS(CONVREP_DNNL_FIND)
#undef CONVREP_DNNL_FIND
    if (!ok || a.engine_create(&a.engine, dnnl_cpu, 0) != dnnl_success) return nullptr;
    return &a;
  }();
  return api;
}

void dnnl_check(dnnl_status_t s, const char *what) {
  TORCH_CHECK(s == dnnl_success, "oneDNN ", what, " failed (status ", static_cast<int>(s), ")");
}

// The calling thread's stream (a CPU stream runs in order on the thread that executes on it).
dnnl_stream_t dnnl_thread_stream(const dnnl_api *a) {
  struct holder {
    dnnl_stream_t s = nullptr;
    ~holder() {
      if (s != nullptr) dnnl()->stream_destroy(s);
    }
  };
  thread_local holder h;
  if (h.s == nullptr) dnnl_check(a->stream_create(&h.s, a->engine, dnnl_stream_default_flags), "stream");
  return h.s;
}

// A primitive descriptor, a primitive and memories freed on scope exit.
struct dnnl_scope {
  const dnnl_api *a;
  std::vector<dnnl_primitive_desc_t> pds;
  std::vector<dnnl_primitive_t> prims;
  std::vector<dnnl_memory_t> mems;
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t ops = nullptr;
  ~dnnl_scope() {
    for (auto m : mems) a->memory_destroy(m);
    for (auto p : prims) a->primitive_destroy(p);
    for (auto p : pds) a->primitive_desc_destroy(p);
    if (attr != nullptr) a->primitive_attr_destroy(attr);
    if (ops != nullptr) a->post_ops_destroy(ops);
  }
  dnnl_memory_t memory(const dnnl_memory_desc_t *md, void *data) {
    dnnl_memory_t m;
    dnnl_check(a->memory_create(&m, md, a->engine, data), "memory");
    mems.push_back(m);
    return m;
  }
  void run(dnnl_primitive_desc_t pd, std::vector<dnnl_exec_arg_t> args) {
    dnnl_primitive_t p;
    dnnl_check(a->primitive_create(&p, pd), "primitive");
    prims.push_back(p);
    dnnl_stream_t s = dnnl_thread_stream(a);
    dnnl_check(a->primitive_execute(p, s, static_cast<int>(args.size()), args.data()), "execute");
    dnnl_check(a->stream_wait(s), "wait");
  }
};

// list copied into d; its length.
int dnnl_dims_of(std::initializer_list<int64_t> list, dnnl_dims_t &d) {
  int n = 0;
  for (int64_t v : list) d[n++] = v;
  return n;
}

dnnl_memory_desc_t dnnl_plain(const dnnl_api *a, std::initializer_list<int64_t> dims, dnnl_format_tag_t tag,
                              dnnl_data_type_t type = dnnl_f32) {
  dnnl_memory_desc_t md;
  dnnl_dims_t d = {};
  dnnl_check(a->memory_desc_init_by_tag(&md, dnnl_dims_of(dims, d), d, type, tag), "memory descriptor");
  return md;
}

// The inference inner product of M rows, K inputs and N outputs (weights in the layout it chooses), with the
// exact GELU after it when gelu, its descriptor owned by sc. Its input and weights are of type in (float32, or
// bfloat16, which oneDNN multiplies with float32 sums), its bias float32, its result of type out.
dnnl_primitive_desc_t dnnl_ip(dnnl_scope &sc, int64_t M, int64_t K, int64_t N, bool bias, bool gelu,
                              dnnl_data_type_t in = dnnl_f32, dnnl_data_type_t out = dnnl_f32) {
  const dnnl_api *a = sc.a;
  dnnl_memory_desc_t src = dnnl_plain(a, {M, K}, dnnl_ab, in), wei = dnnl_plain(a, {N, K}, dnnl_format_tag_any, in),
                     bia = dnnl_plain(a, {N}, dnnl_a), dst = dnnl_plain(a, {M, N}, dnnl_ab, out);
  dnnl_inner_product_desc_t d;
  dnnl_check(a->inner_product_forward_desc_init(&d, dnnl_forward_inference, &src, &wei, bias ? &bia : nullptr, &dst), "inner product");
  if (gelu) {
    dnnl_check(a->primitive_attr_create(&sc.attr), "attributes");
    dnnl_check(a->post_ops_create(&sc.ops), "post-ops");
    dnnl_check(a->post_ops_append_eltwise(sc.ops, 1.0f, dnnl_eltwise_gelu_erf, 0.0f, 0.0f), "GELU post-op");
    dnnl_check(a->primitive_attr_set_post_ops(sc.attr, sc.ops), "post-ops");
  }
  dnnl_primitive_desc_t pd;
  dnnl_check(a->primitive_desc_create(&pd, &d, sc.attr, a->engine, nullptr), "inner product descriptor");
  sc.pds.push_back(pd);
  return pd;
}

// oneDNN's inner product chooses the weights' layout from the whole problem, rows included (on this AVX-512 CPU,
// AB16b64a for 96 or more outputs, AB16b32a for 40, whatever the rows): a weight is packed in each layout chosen
// for these row counts, and a call that wants yet another reorders for itself.
constexpr int64_t dnnl_pack_rows[] = {1, 16, 64, 256, 1024, 4096};
constexpr int dnnl_max_layouts = sizeof(dnnl_pack_rows) / sizeof(dnnl_pack_rows[0]);

// A packed weight is a uint8 tensor: this header, then, from each layout's offset (64-byte aligned, as the
// allocation is), the weights in that layout.
struct dnnl_packed_header {
  int64_t layouts;
  int64_t offsets[dnnl_max_layouts];
  dnnl_memory_desc_t mds[dnnl_max_layouts];
};
constexpr int64_t dnnl_align(int64_t n) { return (n + 63) / 64 * 64; }

// w [N, K] (float32) packed in type (float32 or bfloat16).
at::Tensor dnnl_pack(const dnnl_api *a, const at::Tensor &w, dnnl_data_type_t type) {
  at::Tensor plain = w.detach().contiguous();
  const int64_t N = plain.size(0), K = plain.size(1);
  dnnl_scope sc{a};
  dnnl_packed_header h{};
  int64_t size = dnnl_align(sizeof(h));
  for (int64_t rows : dnnl_pack_rows) {
    const dnnl_memory_desc_t want = *a->primitive_desc_query_md(dnnl_ip(sc, rows, K, N, true, false, type), dnnl_query_weights_md, 0);
    if (std::none_of(h.mds, h.mds + h.layouts, [&](const dnnl_memory_desc_t &m) { return a->memory_desc_equal(&m, &want); })) {
      h.mds[h.layouts] = want;
      h.offsets[h.layouts++] = size;
      size += dnnl_align(static_cast<int64_t>(a->memory_desc_get_size(&want)));
    }
  }
  at::Tensor packed = at::empty({size}, w.options().dtype(at::kByte));
  uint8_t *base = static_cast<uint8_t *>(packed.data_ptr());
  std::memcpy(base, &h, sizeof(h));
  const dnnl_memory_desc_t from = dnnl_plain(a, {N, K}, dnnl_ab);
  for (int64_t i = 0; i < h.layouts; i++) {
    dnnl_primitive_desc_t r;
    dnnl_check(a->reorder_primitive_desc_create(&r, &from, a->engine, &h.mds[i], a->engine, nullptr), "reorder descriptor");
    sc.pds.push_back(r);
    sc.run(r, {{DNNL_ARG_FROM, sc.memory(&from, plain.data_ptr())},
               {DNNL_ARG_TO, sc.memory(&h.mds[i], base + h.offsets[i])}});
  }
  return packed;
}

} // namespace
#endif

int convrep_mkldnn_direct(void) {
#ifdef CONVREP_DNNL
  return dnnl() != nullptr ? 1 : 0;
#else
  return 0;
#endif
}

int convrep_onednn_loaded(void) { return dlsym(RTLD_DEFAULT, "dnnl_engine_create") != nullptr ? 1 : 0; }

#ifdef CONVREP_DNNL
namespace {
bool dnnl_packed(const at::Tensor &wp) { return !wp.is_mkldnn() && wp.scalar_type() == at::kByte && wp.dim() == 1; }

at::ScalarType dnnl_scalar(dnnl_data_type_t t) { return t == dnnl_bf16 ? at::kBFloat16 : at::kFloat; }

// y [M, N] = x [M, K]·wᵀ + bias, GELU after when gelu, on a packed weight; y is float32, or bfloat16 when out is
// and the weight is bfloat16 (x is converted to the weight's type).
at::Tensor dnnl_linear(const dnnl_api *a, const at::Tensor &x, const at::Tensor &wp, const at::Tensor *bias, bool gelu,
                       dnnl_data_type_t out = dnnl_f32) {
  dnnl_packed_header h;
  TORCH_CHECK(wp.numel() >= static_cast<int64_t>(sizeof(h)), "oneDNN linear: the weight is not packed (convrep_mkldnn_weight)");
  std::memcpy(&h, wp.data_ptr(), sizeof(h));
  TORCH_CHECK(h.layouts >= 1 && h.layouts <= dnnl_max_layouts, "oneDNN linear: the weight is not packed (convrep_mkldnn_weight)");
  const int64_t N = h.mds[0].dims[0], K = h.mds[0].dims[1], M = x.size(0);
  TORCH_CHECK(x.size(1) == K, "oneDNN linear: x has ", x.size(1), " features, the weight ", K);
  if (M == 0) return at::empty({0, N}, x.options().dtype(at::kFloat));
  dnnl_scope sc{a};
  const dnnl_data_type_t in = h.mds[0].data_type;
  if (in != dnnl_bf16) out = dnnl_f32;
  dnnl_primitive_desc_t ip = dnnl_ip(sc, M, K, N, bias != nullptr, gelu, in, out);
  const dnnl_memory_desc_t want = *a->primitive_desc_query_md(ip, dnnl_query_weights_md, 0);
  uint8_t *base = static_cast<uint8_t *>(wp.data_ptr());
  void *w = nullptr;
  for (int64_t i = 0; i < h.layouts && w == nullptr; i++) {
    if (a->memory_desc_equal(&h.mds[i], &want)) w = base + h.offsets[i];
  }
  at::Tensor other; // the weight in a layout none of the packed ones is
  if (w == nullptr) {
    other = at::empty({static_cast<int64_t>(a->memory_desc_get_size(&want))}, wp.options());
    dnnl_primitive_desc_t r;
    dnnl_check(a->reorder_primitive_desc_create(&r, &h.mds[0], a->engine, &want, a->engine, nullptr), "reorder descriptor");
    sc.pds.push_back(r);
    sc.run(r, {{DNNL_ARG_FROM, sc.memory(&h.mds[0], base + h.offsets[0])}, {DNNL_ARG_TO, sc.memory(&want, other.data_ptr())}});
    w = other.data_ptr();
  }
  at::Tensor xc = x.to(dnnl_scalar(in)).contiguous(), y = at::empty({M, N}, x.options().dtype(dnnl_scalar(out)));
  const dnnl_memory_desc_t src = dnnl_plain(a, {M, K}, dnnl_ab, in), dst = dnnl_plain(a, {M, N}, dnnl_ab, out);
  std::vector<dnnl_exec_arg_t> args = {{DNNL_ARG_SRC, sc.memory(&src, xc.data_ptr())},
                                       {DNNL_ARG_WEIGHTS, sc.memory(&want, w)},
                                       {DNNL_ARG_DST, sc.memory(&dst, y.data_ptr())}};
  at::Tensor b;
  if (bias != nullptr) {
    b = bias->contiguous();
    TORCH_CHECK(b.scalar_type() == at::kFloat && b.numel() == N, "oneDNN linear: the bias has ", b.numel(), " values, want ", N);
    const dnnl_memory_desc_t bmd = dnnl_plain(a, {N}, dnnl_a);
    args.push_back({DNNL_ARG_BIAS, sc.memory(&bmd, b.data_ptr())});
  }
  sc.run(ip, args);
  return y;
}

// A float32 memory descriptor of the given dimensions and strides (in elements).
dnnl_memory_desc_t dnnl_strided(const dnnl_api *a, std::initializer_list<int64_t> dims, std::initializer_list<int64_t> strides) {
  dnnl_memory_desc_t md;
  dnnl_dims_t d = {}, st = {};
  dnnl_dims_of(strides, st);
  dnnl_check(a->memory_desc_init_by_strides(&md, dnnl_dims_of(dims, d), d, dnnl_f32, st), "memory descriptor");
  return md;
}

// convrep_cpu_attention for rows of qkv [rows, T, 3H] (the mask's rows add [rows, T] or nullptr) into ctx [rows, T,
// H] by oneDNN's batched matmul on strided views of the heads: the scores scaled and the mask added as the first
// matmul's attributes, libtorch's softmax, the context written at its heads' columns.
void dnnl_attention(const dnnl_api *a, const float *qkv, const float *add, float *ctx, int64_t rows, int64_t T,
                    int64_t H, int64_t heads, const at::TensorOptions &opts) {
  const int64_t dh = H / heads;
  dnnl_scope sc{a};
  // q and v: [rows, heads, T, dh] within qkv (at offsets 0 and 2H); kᵀ the keys transposed, at offset H.
  const dnnl_memory_desc_t q = dnnl_strided(a, {rows, heads, T, dh}, {T * 3 * H, dh, 3 * H, 1}),
                           kt = dnnl_strided(a, {rows, heads, dh, T}, {T * 3 * H, dh, 1, 3 * H}),
                           s = dnnl_plain(a, {rows, heads, T, T}, dnnl_abcd),
                           m = dnnl_plain(a, {rows, 1, 1, T}, dnnl_abcd);
  dnnl_matmul_desc_t d1;
  dnnl_check(a->matmul_desc_init(&d1, &q, &kt, nullptr, &s), "matmul");
  dnnl_check(a->primitive_attr_create(&sc.attr), "attributes");
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)));
  dnnl_check(a->primitive_attr_set_output_scales(sc.attr, 1, 0, &scale), "scale");
  if (add != nullptr) {
    dnnl_check(a->post_ops_create(&sc.ops), "post-ops");
    dnnl_check(a->post_ops_append_binary(sc.ops, dnnl_binary_add, &m), "mask post-op");
    dnnl_check(a->primitive_attr_set_post_ops(sc.attr, sc.ops), "post-ops");
  }
  dnnl_primitive_desc_t p1;
  dnnl_check(a->primitive_desc_create(&p1, &d1, sc.attr, a->engine, nullptr), "matmul descriptor");
  sc.pds.push_back(p1);
  at::Tensor scores = at::empty({rows, heads, T, T}, opts);
  std::vector<dnnl_exec_arg_t> args = {{DNNL_ARG_SRC, sc.memory(&q, const_cast<float *>(qkv))},
                                       {DNNL_ARG_WEIGHTS, sc.memory(&kt, const_cast<float *>(qkv + H))},
                                       {DNNL_ARG_DST, sc.memory(&s, scores.data_ptr())}};
  if (add != nullptr) args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, sc.memory(&m, const_cast<float *>(add))});
  sc.run(p1, args);
  at::Tensor probs = at::_softmax(scores, -1, false);
  const dnnl_memory_desc_t c = dnnl_strided(a, {rows, heads, T, dh}, {T * H, dh, H, 1});
  dnnl_matmul_desc_t d2;
  dnnl_check(a->matmul_desc_init(&d2, &s, &q, nullptr, &c), "matmul");
  dnnl_primitive_desc_t p2;
  dnnl_check(a->primitive_desc_create(&p2, &d2, nullptr, a->engine, nullptr), "matmul descriptor");
  sc.pds.push_back(p2);
  sc.run(p2, {{DNNL_ARG_SRC, sc.memory(&s, probs.data_ptr())},
              {DNNL_ARG_WEIGHTS, sc.memory(&q, const_cast<float *>(qkv + 2 * H))},
              {DNNL_ARG_DST, sc.memory(&c, ctx)}});
}

// LayerNorm over the last dimension of x, with a weight and bias per feature (contiguous), by oneDNN's
// layer normalisation: on BERT's [rows, 256] about 2.4x faster than libtorch 1.13's kernel here.
at::Tensor dnnl_layer_norm(const dnnl_api *a, const at::Tensor &x, const at::Tensor &w, const at::Tensor &b, double eps) {
  const int64_t C = x.size(-1), M = x.numel() / C;
  at::Tensor xc = x.contiguous(), y = at::empty_like(xc);
  dnnl_scope sc{a};
  const dnnl_memory_desc_t data = dnnl_plain(a, {M, C}, dnnl_ab), ss = dnnl_plain(a, {C}, dnnl_a);
  dnnl_layer_normalization_desc_t d;
  dnnl_check(a->layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &data, nullptr, static_cast<float>(eps),
                                                      dnnl_use_scale | dnnl_use_shift), "layer norm");
  dnnl_primitive_desc_t pd;
  dnnl_check(a->primitive_desc_create(&pd, &d, nullptr, a->engine, nullptr), "layer norm descriptor");
  sc.pds.push_back(pd);
  sc.run(pd, {{DNNL_ARG_SRC, sc.memory(&data, xc.data_ptr())},
              {DNNL_ARG_DST, sc.memory(&data, y.data_ptr())},
              {DNNL_ARG_SCALE, sc.memory(&ss, w.data_ptr())},
              {DNNL_ARG_SHIFT, sc.memory(&ss, b.data_ptr())}});
  return y;
}
} // namespace
#endif

int convrep_mkldnn_available(void) { return at::hasMKLDNN() ? 1 : 0; }

char *convrep_mkldnn_weight(void *wh, int bf16, void **out) {
  try {
    const at::Tensor &w = tensor(wh);
    TORCH_CHECK(w.dim() == 2 && w.device().is_cpu() && w.scalar_type() == at::kFloat,
                "a oneDNN weight is a CPU float32 matrix, got ", w.scalar_type(), " ", w.sizes(), " on ", w.device());
#ifdef CONVREP_DNNL
    if (const dnnl_api *a = dnnl()) {
      *out = handle(dnnl_pack(a, w, bf16 != 0 ? dnnl_bf16 : dnnl_f32));
      return nullptr;
    }
#endif
    TORCH_CHECK(bf16 == 0, "bfloat16 oneDNN weights need oneDNN called directly (libdnnl-dev at set-up)");
    *out = handle(w.detach().contiguous().to_mkldnn());
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_mkldnn_linear(void *xh, void *wh, void *bh, void **out) {
  try {
    const at::Tensor &x = tensor(xh), &wp = tensor(wh);
#ifdef CONVREP_DNNL
    if (dnnl_packed(wp)) {
      const at::Tensor *bias = bh != nullptr ? &tensor(bh) : nullptr;
      TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1,
                  "oneDNN linear: x is ", x.scalar_type(), " ", x.sizes(), " on ", x.device());
      at::Tensor y = dnnl_linear(dnnl(), x.reshape({-1, x.size(-1)}), wp, bias, false);
      std::vector<int64_t> sizes = x.sizes().vec();
      sizes.back() = y.size(1);
      *out = handle(y.view(sizes));
      return nullptr;
    }
#endif
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
    // A chunk of rows at a time (it bounds the scores to about 32 MB), in three passes: every (row, head) pair's
    // scores, libtorch's own vectorised softmax over all of them at once, every pair's context. A softmax written
    // here, one row at a time with std::exp, took two thirds of the attention's time.
    //
    // Up to 16 tokens, the BLAS's small-matrix kernels make the GEMMs, the pairs shared among libtorch's intra-op
    // threads; past that, oneDNN's batched matmul does (where the build calls oneDNN): OpenBLAS starts its own
    // threads inside each call there. Measured on the mini BERT's 64 rows x 4 heads on 2 threads, BLAS against
    // oneDNN: 8 tokens 86 against 136 µs, 16 tokens 267 against 318 µs, 32 tokens 1.08 against 0.78 ms, 128
    // tokens 34 against 9 ms.
    const int64_t per_row = heads * T * T, chunk = std::max<int64_t>(1, (int64_t{8} << 20) / std::max<int64_t>(1, per_row));
    for (int64_t b0 = 0; b0 < B && T > 0; b0 += chunk) {
      const int64_t rows = std::min(chunk, B - b0);
#ifdef CONVREP_DNNL
      if (T > 16 && dnnl() != nullptr) {
        dnnl_attention(dnnl(), base + b0 * T * 3 * H, add != nullptr ? add + b0 * T : nullptr, o + b0 * T * H, rows, T, H,
                       heads, x.options());
        continue;
      }
#endif
      at::Tensor scores = at::empty({rows * heads, T, T}, x.options());
      float *sp = scores.data_ptr<float>();
      at::parallel_for(0, rows * heads, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; i++) {
          const int64_t b = b0 + i / heads, h = i % heads;
          const float *q = base + b * T * 3 * H + h * dh, *k = q + H;
          float *s = sp + i * T * T, beta = 0;
          if (add != nullptr) { // every row of S starts as the mask, which the GEMM adds to (beta 1)
            for (int64_t r = 0; r < T; r++) std::memcpy(s + r * T, add + b * T, T * sizeof(float));
            beta = 1;
          }
          // Row-major scores S[i][j] = q_i·k_j·scale: column-major, S is (kᵀ)ᵀ·q with k and q as dh x T.
          gemm("T", "N", &t, &t, &d, &scale, k, &ld3, q, &ld3, &beta, s, &t);
        }
      });
      at::Tensor probs = at::_softmax(scores, -1, false);
      const float *pp = probs.data_ptr<float>();
      at::parallel_for(0, rows * heads, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; i++) {
          const int64_t b = b0 + i / heads, h = i % heads;
          const float *v = base + b * T * 3 * H + h * dh + 2 * H;
          // Row-major context C[i] = Σ_j S[i][j]·v_j, written at its head's columns of ctx [B, T, H]:
          // column-major, C (dh x T, ld H) is v (dh x T, ld 3H) times S (T x T).
          gemm("N", "N", &d, &t, &t, &one, v, &ld3, pp + i * T * T, &t, &zero, o + b * T * H + h * dh, &ldo);
        }
      });
    }
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
#ifdef CONVREP_DNNL
    if (dnnl_packed(w1) && dnnl_packed(w2)) {
      TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1,
                  "oneDNN feed-forward: x is ", x.scalar_type(), " ", x.sizes(), " on ", x.device());
      const at::Tensor *b1 = b1h != nullptr ? &tensor(b1h) : nullptr, *b2 = b2h != nullptr ? &tensor(b2h) : nullptr;
      // bfloat16 weights: the widest activation stays bfloat16 between the two products.
      at::Tensor inner = dnnl_linear(dnnl(), x.reshape({-1, x.size(-1)}), w1, b1, true, dnnl_bf16);
      at::Tensor y = dnnl_linear(dnnl(), inner, w2, b2, false);
      std::vector<int64_t> sizes = x.sizes().vec();
      sizes.back() = y.size(1);
      *out = handle(y.view(sizes));
      return nullptr;
    }
#endif
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

char *convrep_mkldnn_layer_norm(void *xh, void *wh, void *bh, double eps, void **out) {
  try {
    const at::Tensor &x = tensor(xh), &w = tensor(wh), &b = tensor(bh);
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1 && w.scalar_type() == at::kFloat &&
                    b.scalar_type() == at::kFloat && w.numel() == x.size(-1) && b.numel() == x.size(-1),
                "LayerNorm: x is ", x.scalar_type(), " ", x.sizes(), " on ", x.device(), ", the weight ", w.sizes(),
                " and bias ", b.sizes(), ", want CPU float32 with one weight and bias per feature");
#ifdef CONVREP_DNNL
    if (const dnnl_api *a = dnnl(); a != nullptr && x.numel() > 0) {
      *out = handle(dnnl_layer_norm(a, x, w.contiguous(), b.contiguous(), eps));
      return nullptr;
    }
#endif
    *out = handle(at::layer_norm(x, {x.size(-1)}, w, b, eps));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}
