// check.cpp: the kernels on a GPU, the way internal/torch runs them: Source() compiled by NVRTC with no
// include path, each entry looked up by name and launched with cuLaunchKernel, and the results held to the
// same row functions compiled here for the host (one lane). Also: the dropout mask is the host's, element
// for element, and two runs give identical bits. Then it times each kernel at BERT-base's shapes at batch 1,024
// in the launch internal/torch makes and in others, beside a plain copy of as many bytes (bench below), so that
// one call on a lent GPU says which launch to keep. Usage: check SOURCE_FILE (Source() written out).
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../portable.cuh"
#include "../bf16.cuh"
#include "../philox.cuh"
#include "../dropout.cuh"
#include "../reduce.cuh"
#include "../layernorm.cuh"
#include "../embeddings.cuh"
#include "../gelu.cuh"

#define CU(x) cu_check((x), #x, __LINE__)
static void cu_check(CUresult r, const char* what, int line) {
    if (r != CUDA_SUCCESS) {
        const char* s = "?";
        cuGetErrorString(r, &s);
        std::fprintf(stderr, "line %d: %s: %s\n", line, what, s);
        std::exit(2);
    }
}

// The row functions' K for the host's one lane: chunks of four for rows of up to 4096 columns.
constexpr int kHostChunks = 1024;

static int failures = 0;
static CUmodule module;

static CUfunction fn(const std::string& name) {
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, name.c_str()));
    return f;
}

template <class T> struct storage;
template <> struct storage<float> {
    static const char* suffix() { return "f32"; }
    static float to(float v) { return v; }
    static float from(float v) { return v; }
    static double ulps() { return 0; }
};
template <> struct storage<unsigned short> {
    static const char* suffix() { return "bf16"; }
    static unsigned short to(float v) { return convrep_f32_to_bf16(v); }
    static float from(unsigned short v) { return convrep_bf16_to_f32(v); }
    static double ulps() { return std::ldexp(1.0, -7); }  // one bf16 ulp, relative: FMAs may round the other way
};

template <class E> struct dbuf {
    CUdeviceptr p = 0;
    size_t n;
    explicit dbuf(size_t n) : n(n) { CU(cuMemAlloc(&p, n * sizeof(E) + 16)); CU(cuMemsetD8(p, 0xff, n * sizeof(E))); }
    explicit dbuf(const std::vector<E>& v) : dbuf(v.size()) { CU(cuMemcpyHtoD(p, v.data(), n * sizeof(E))); }
    ~dbuf() { cuMemFree(p); }
    std::vector<E> get() const { std::vector<E> v(n); CU(cuMemcpyDtoH(v.data(), p, n * sizeof(E))); return v; }
};

static void launch(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args) {
    CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr));
    CU(cuCtxSynchronize());
}

template <class A, class B>
static void compare(const std::string& what, const std::vector<A>& dev, const std::vector<B>& host, double tol, double ulps,
                    double scale = 0) {
    // scale: the largest |host|, unless given (a mean is judged at the scale of the values it averages)
    if (scale == 0) {
        scale = 1e-30;
        for (auto h : host) scale = std::fmax(scale, std::fabs((double)storage<B>::from(h)));
    }
    for (size_t i = 0; i < dev.size(); ++i) {
        double d = storage<A>::from(dev[i]), h = storage<B>::from(host[i]);
        if (!(std::fabs(d - h) <= tol * scale + ulps * std::fabs(h))) {
            std::printf("FAIL %s: element %zu device %.9g host %.9g (scale %.3g)\n", what.c_str(), i, d, h, scale);
            ++failures;
            return;
        }
    }
}

template <class T>
static std::vector<T> draw(std::mt19937& g, size_t n, float scale, float shift) {
    std::normal_distribution<float> nd;
    std::vector<T> v(n);
    for (auto& x : v) x = storage<T>::to(shift + scale * nd(g));
    return v;
}

// ln_case runs the forward and backward entries of dropout + residual + LayerNorm on random rows: a block a row
// (warp false: `threads` lanes a row, the forward's grid a block a row), or a warp a row (the _warp_ entries,
// threads/32 rows a block, the forward's grid as many blocks as that needs). The backward's grid is `blocks`;
// its partial sums are a row per block, or per warp, and the host makes the same rows from the same split.
template <class T>
static void ln_case(int rows, int cols, unsigned threads, float p, unsigned blocks, bool warp = false) {
    const float eps = 1e-12f;
    const unsigned long long seed = 0x0123456789abcdefull, offset = 4ull << 33;
    const long long* const no_ptr = nullptr; // not captured: seed and offset are the values
    const unsigned rows_per_block = warp ? threads / 32 : 1, parts = blocks * rows_per_block;
    std::string name = std::string("ln ") + (warp ? "warp " : "") + storage<T>::suffix() + " " + std::to_string(rows) +
                       "x" + std::to_string(cols) + " threads " + std::to_string(threads) + " p " + std::to_string(p) +
                       " G " + std::to_string(blocks);
    std::mt19937 g(rows * 7919 + cols);
    size_t n = (size_t)rows * cols;
    auto x = draw<T>(g, n, 1, 0), resid = draw<T>(g, n, 1, 0), dy = draw<T>(g, n, 1, 0);
    auto gamma = draw<float>(g, cols, 0.2f, 1), beta = draw<float>(g, cols, 0.2f, 0);

    dbuf<T> dx_(x), dres(resid), ddy(dy), dout(n), dsum(n), ddx(n), ddres(n);
    dbuf<float> dg(gamma), db(beta), dmean(rows), drstd(rows), dgp((size_t)parts * cols), dbp((size_t)parts * cols);
    const std::string kind = warp ? "warp_" : "";
    CUfunction fwd = fn("convrep_drop_add_ln_fwd_" + kind + storage<T>::suffix());
    CUfunction bwd = fn("convrep_drop_add_ln_bwd_" + kind + storage<T>::suffix());
    const unsigned fwd_grid = (rows + rows_per_block - 1) / rows_per_block;
    auto run = [&] {
        launch(fwd, fwd_grid, threads, {&dx_.p, &dres.p, &dg.p, &db.p, &dout.p, &dsum.p, &dmean.p, &drstd.p, &rows, &cols,
                                    (void*)&p, (void*)&eps, (void*)&seed, (void*)&offset, (void*)&no_ptr, (void*)&no_ptr});
        launch(bwd, blocks, threads, {&ddy.p, &dsum.p, &dmean.p, &drstd.p, &dg.p, &ddx.p, &ddres.p, &dgp.p, &dbp.p,
                                      &rows, &cols, (void*)&p, (void*)&seed, (void*)&offset, (void*)&no_ptr, (void*)&no_ptr});
    };
    run();
    auto out = dout.get(), sum = dsum.get(), ddxv = ddx.get(), ddresv = ddres.get();
    auto mean = dmean.get(), rstd = drstd.get(), gp = dgp.get(), bp = dbp.get();

    std::vector<T> hout(n), hsum(n), hdx(n), hdres(n);
    std::vector<float> hmean(rows), hrstd(rows), hgp((size_t)parts * cols), hbp((size_t)parts * cols);
    for (long long r = 0; r < rows; ++r)
        convrep_drop_add_ln_fwd_row<kHostChunks>(x.data(), resid.data(), gamma.data(), beta.data(), hout.data(),
                                                 hsum.data(), hmean.data(), hrstd.data(), r, cols, p, eps, seed, offset,
                                                 0, 1, convrep_one_lane_sum{});
    compare(name + " sum", sum, hsum, 1e-6, storage<T>::ulps());
    compare(name + " out", out, hout, 1e-5, storage<T>::ulps());
    double sum_scale = 0;
    for (auto v : hsum) sum_scale = std::fmax(sum_scale, std::fabs((double)storage<T>::from(v)));
    compare(name + " mean", mean, hmean, 1e-5, 0, sum_scale);
    compare(name + " rstd", rstd, hrstd, 1e-5, 0);
    // backward from the device's forward, so that it is checked on its own
    for (unsigned b = 0; b < parts; ++b)
        convrep_drop_add_ln_bwd_block<kHostChunks>(dy.data(), sum.data(), mean.data(), rstd.data(), gamma.data(),
                                                   hdx.data(), hdres.data(), hgp.data(), hbp.data(), rows, cols, p, seed,
                                                   offset, b, parts, 0, 1, convrep_one_lane_sum{});
    compare(name + " dresid", ddresv, hdres, 1e-5, storage<T>::ulps());
    compare(name + " dx", ddxv, hdx, 1e-5, storage<T>::ulps());
    compare(name + " dgamma_part", gp, hgp, 1e-5, 0);
    compare(name + " dbeta_part", bp, hbp, 1e-5, 0);
    for (size_t e = 0; e < n; ++e) {
        bool keep = convrep_dropout_keep(seed, offset, (long long)e, p);
        if (storage<T>::from(ddresv[e]) != 0 && (storage<T>::from(ddxv[e]) != 0) != keep) {
            std::printf("FAIL %s: element %zu: device dx %g but the host mask says keep=%d\n", name.c_str(), e,
                        (double)storage<T>::from(ddxv[e]), keep);
            ++failures;
            break;
        }
    }
    run();
    if (dout.get() != out || dsum.get() != sum || ddx.get() != ddxv || dgp.get() != gp || dbp.get() != bp) {
        std::printf("FAIL %s: a second run gave other bits\n", name.c_str());
        ++failures;
    }
    std::printf("done %s\n", name.c_str());
}

template <class T>
static void gelu_case(int rows, int cols, unsigned threads, unsigned blocks) {
    std::string name = std::string("gelu ") + storage<T>::suffix() + " " + std::to_string(rows) + "x" +
                       std::to_string(cols) + " threads " + std::to_string(threads) + " G " + std::to_string(blocks);
    std::mt19937 g(rows * 31 + cols);
    size_t n = (size_t)rows * cols;
    auto x = draw<T>(g, n, 2, 0), dy = draw<T>(g, n, 1, 0);
    auto bias = draw<float>(g, cols, 0.5f, 0);
    dbuf<T> dx_(x), ddy(dy), dout(n), ddx(n);
    dbuf<float> dbias(bias), dbp((size_t)blocks * cols);
    CUfunction fwd = fn(std::string("convrep_bias_gelu_fwd_") + storage<T>::suffix());
    CUfunction bwd = fn(std::string("convrep_bias_gelu_bwd_") + storage<T>::suffix());
    launch(fwd, rows, threads, {&dx_.p, &dbias.p, &dout.p, &rows, &cols});
    launch(bwd, blocks, threads, {&dx_.p, &dbias.p, &ddy.p, &ddx.p, &dbp.p, &rows, &cols});
    std::vector<T> hout(n), hdx(n);
    std::vector<float> hbp((size_t)blocks * cols);
    for (long long r = 0; r < rows; ++r)
        convrep_bias_gelu_fwd_row<kHostChunks>(x.data(), bias.data(), hout.data(), r, cols, 0, 1);
    for (unsigned b = 0; b < blocks; ++b)
        convrep_bias_gelu_bwd_block<kHostChunks>(x.data(), bias.data(), dy.data(), hdx.data(), hbp.data(), rows, cols,
                                                 b, blocks, 0, 1);
    compare(name + " out", dout.get(), hout, 1e-5, storage<T>::ulps());
    compare(name + " dx", ddx.get(), hdx, 1e-5, storage<T>::ulps());
    compare(name + " dbias_part", dbp.get(), hbp, 1e-5, 0);
    std::printf("done %s\n", name.c_str());
}

// embed_case runs the embeddings' entries (a warp a row, 4 rows a block) on random tables and ids, row 3's word id
// outside the vocabulary when there are more than 3 rows (its outputs NaN, the host's too), with or without a
// token-type table, and holds them to the host's row functions; the backward's grid is `blocks`.
static void embed_case(int rows, int cols, bool types, float p, unsigned blocks) {
    const float eps = 1e-12f;
    const unsigned long long seed = 0x0123456789abcdefull, offset = 4ull << 33;
    const long long* const no_ptr = nullptr;
    const long long vocab = 50, positions = 40, ntypes = types ? 2 : 0;
    const unsigned parts = blocks * 4;
    std::string name = "embed " + std::to_string(rows) + "x" + std::to_string(cols) + (types ? " types" : "") + " p " +
                       std::to_string(p) + " G " + std::to_string(blocks);
    std::mt19937 g(rows * 131 + cols);
    size_t n = (size_t)rows * cols;
    auto word = draw<float>(g, vocab * cols, 0.05f, 0), pos = draw<float>(g, positions * cols, 0.02f, 0);
    auto type = draw<float>(g, 2 * cols, 0.02f, 0), dy = draw<float>(g, n, 1, 0);
    auto gamma = draw<float>(g, cols, 0.2f, 1), beta = draw<float>(g, cols, 0.2f, 0);
    std::vector<long long> ids(rows), pos_ids(rows), type_ids(rows);
    for (int r = 0; r < rows; ++r) ids[r] = g() % vocab, pos_ids[r] = g() % positions, type_ids[r] = g() % 2;
    if (rows > 3) ids[3] = vocab;

    dbuf<float> dword(word), dpos(pos), dtype(type), ddy(dy), dg(gamma), db(beta), dout(n), dmean(rows), drstd(rows),
        dds(n), dgp((size_t)parts * cols), dbp((size_t)parts * cols);
    dbuf<long long> dids(ids), dpids(pos_ids), dtids(type_ids);
    CUdeviceptr tp = types ? dtype.p : 0, tip = types ? dtids.p : 0;
    launch(fn("convrep_embed_ln_drop_fwd_f32"), (rows + 3) / 4, 128,
           {&dword.p, &dpos.p, &tp, &dids.p, &dpids.p, &tip, (void*)&vocab, (void*)&positions, (void*)&ntypes, &dg.p,
            &db.p, &dout.p, &dmean.p, &drstd.p, &rows, &cols, (void*)&p, (void*)&eps, (void*)&seed, (void*)&offset,
            (void*)&no_ptr, (void*)&no_ptr});
    launch(fn("convrep_embed_ln_drop_bwd_f32"), blocks, 128,
           {&ddy.p, &dword.p, &dpos.p, &tp, &dids.p, &dpids.p, &tip, (void*)&vocab, (void*)&positions, (void*)&ntypes,
            &dmean.p, &drstd.p, &dg.p, &dds.p, &dgp.p, &dbp.p, &rows, &cols, (void*)&p, (void*)&seed, (void*)&offset,
            (void*)&no_ptr, (void*)&no_ptr});

    const convrep_embed_tables t = {word.data(), pos.data(),  types ? type.data() : nullptr,
                                    ids.data(),  pos_ids.data(), types ? type_ids.data() : nullptr,
                                    vocab,       positions,      ntypes};
    std::vector<float> hout(n), hmean(rows), hrstd(rows), hds(n), hgp((size_t)parts * cols), hbp((size_t)parts * cols);
    for (long long r = 0; r < rows; ++r)
        convrep_embed_ln_drop_fwd_row<kHostChunks>(t, gamma.data(), beta.data(), hout.data(), hmean.data(), hrstd.data(),
                                                   r, cols, p, eps, seed, offset, 0, 1, convrep_one_lane_sum{});
    for (unsigned b = 0; b < parts; ++b)
        convrep_embed_ln_drop_bwd_block<kHostChunks>(dy.data(), t, hmean.data(), hrstd.data(), gamma.data(), hds.data(),
                                                     hgp.data(), hbp.data(), rows, cols, p, seed, offset, b, parts, 0, 1,
                                                     convrep_one_lane_sum{});
    // NaN rows: the same on both sides; compare the rest.
    auto finite = [&](std::vector<float> v) {
        for (auto& x : v) x = std::isnan(x) ? -7.0f : x;
        return v;
    };
    compare(name + " out", finite(dout.get()), finite(hout), 1e-5, 0);
    compare(name + " rstd", finite(drstd.get()), finite(hrstd), 1e-5, 0);
    compare(name + " ds", finite(dds.get()), finite(hds), 1e-5, 0);
    compare(name + " dgamma_part", finite(dgp.get()), finite(hgp), 1e-5, 0);
    compare(name + " dbeta_part", finite(dbp.get()), finite(hbp), 1e-5, 0);
    std::printf("done %s\n", name.c_str());
}

// time_us is one run of op in microseconds: the median of 5 passes of 20 runs back to back, each pass timed by
// events, after one run to warm up.
static double time_us(const std::function<void()>& op) {
    CUevent a, b;
    CU(cuEventCreate(&a, 0));
    CU(cuEventCreate(&b, 0));
    op();
    CU(cuCtxSynchronize());
    std::vector<double> t;
    for (int pass = 0; pass < 5; ++pass) {
        CU(cuEventRecord(a, nullptr));
        for (int i = 0; i < 20; ++i) op();
        CU(cuEventRecord(b, nullptr));
        CU(cuEventSynchronize(b));
        float ms = 0;
        CU(cuEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000 / 20);
    }
    CU(cuEventDestroy(a));
    CU(cuEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[2];
}

// time_us of one launch of f.
static double time_us(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args) {
    return time_us([&] { CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr)); });
}

static void report(const char* kernel, const std::string& launch, double us, double bytes) {
    std::printf("time %-26s %-34s %8.1f us %6.0f GB/s\n", kernel, launch.c_str(), us, bytes / us / 1e3);
}

// bench times the kernels at BERT-base's shapes at batch 1,024 in bf16 (65,536 rows of 768 for dropout +
// residual + LayerNorm, of 3,072 for bias + GELU), each in the launch internal/torch/kernels.cpp makes (marked
// "torch": a warp a row, 4 rows a block, for LayerNorm; a block a row of 192 threads for GELU) and in others:
// the other launch of LayerNorm (a block a row, for rows wider than a warp holds), other block sizes, a grid of
// as many blocks as the GPU holds at once looping over the rows. GB/s counts each tensor read or written once, as
// a copy does; the first line is that copy (cuMemcpyDtoD), the card's ceiling for these kernels. Then the two
// LayerNorm launches are held to each other: the same sum bit for bit, the rest within rounding (their totals
// are added in another order).
static void bench(CUdevice dev) {
    int sms = 0;
    CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    auto resident = [&](CUfunction f, unsigned threads) {
        int n = 0;
        CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, (int)threads, 0));
        return (unsigned)(n * sms);
    };
    int rows = 65536, h = 768, w = 3072;
    float p = 0.1f, eps = 1e-12f;
    unsigned long long seed = 0x0123456789abcdefull, offset = 0;
    const long long* no_ptr = nullptr;
    std::mt19937 g(42);
    const size_t nh = (size_t)rows * h, nw = (size_t)rows * w, parts = 8192;
    const double bh = nh * 2.0, bw = nw * 2.0;  // bytes of one [rows, h] and one [rows, w] bf16 tensor

    dbuf<unsigned short> x(draw<unsigned short>(g, nh, 1, 0)), resid(draw<unsigned short>(g, nh, 1, 0)),
        dy(draw<unsigned short>(g, nh, 1, 0)), out(nh), sum(nh), dx(nh), dresid(nh), out2(nh), sum2(nh), dx2(nh),
        dresid2(nh);
    dbuf<float> gamma(draw<float>(g, h, 0.2f, 1)), beta(draw<float>(g, h, 0.2f, 0)), mean(rows), rstd(rows),
        dgp(parts * h), dbp(parts * h), dgp2(parts * h), dbp2(parts * h);
    dbuf<unsigned short> gx(draw<unsigned short>(g, nw, 2, 0)), gdy(draw<unsigned short>(g, nw, 1, 0)), gout(nw), gdx(nw);
    dbuf<float> bias(draw<float>(g, w, 0.5f, 0)), dbias(parts * w);

    report("copy", "cuMemcpyDtoD, 101 MB", time_us([&] { CU(cuMemcpyDtoD(out.p, x.p, (size_t)bh)); }), 2 * bh);

    CUfunction lnf = fn("convrep_drop_add_ln_fwd_bf16"), lnb = fn("convrep_drop_add_ln_bwd_bf16");
    CUfunction lnwf = fn("convrep_drop_add_ln_fwd_warp_bf16"), lnwb = fn("convrep_drop_add_ln_bwd_warp_bf16");
    CUfunction gf = fn("convrep_bias_gelu_fwd_bf16"), gb = fn("convrep_bias_gelu_bwd_bf16");
    std::vector<void*> lnf_args = {&x.p, &resid.p, &gamma.p, &beta.p, &out.p, &sum.p, &mean.p, &rstd.p, &rows, &h,
                                   &p, &eps, &seed, &offset, &no_ptr, &no_ptr};
    std::vector<void*> lnb_args = {&dy.p, &sum.p, &mean.p, &rstd.p, &gamma.p, &dx.p, &dresid.p, &dgp.p, &dbp.p,
                                   &rows, &h, &p, &seed, &offset, &no_ptr, &no_ptr};
    std::vector<void*> gf_args = {&gx.p, &bias.p, &gout.p, &rows, &w};
    std::vector<void*> gb_args = {&gx.p, &bias.p, &gdy.p, &gdx.p, &dbias.p, &rows, &w};
    auto name = [](unsigned grid, unsigned threads) {
        return "grid " + std::to_string(grid) + " x " + std::to_string(threads);
    };

    for (unsigned t : {64u, 128u, 256u}) {  // a warp a row, t/32 rows a block; 128: internal/torch's
        const unsigned grid = rows / (t / 32);
        report("drop_add_ln_fwd_warp", name(grid, t) + (t == 128 ? " (torch)" : ""), time_us(lnwf, grid, t, lnf_args),
               4 * bh);
    }
    unsigned r = resident(lnwf, 128);
    report("drop_add_ln_fwd_warp", name(r, 128) + " looping", time_us(lnwf, r, 128, lnf_args), 4 * bh);
    for (unsigned t : {64u, 128u, 192u}) {  // a block a row
        report("drop_add_ln_fwd", name(rows, t), time_us(lnf, rows, t, lnf_args), 4 * bh);
    }
    r = resident(lnf, 64);
    report("drop_add_ln_fwd", name(r, 64) + " looping", time_us(lnf, r, 64, lnf_args), 4 * bh);

    // The backward grids: as many blocks as the GPU holds (internal/torch's backward_blocks), and twice that.
    for (unsigned t : {64u, 128u, 256u}) {
        unsigned grid = std::min<unsigned>(resident(lnwb, t), parts / (t / 32));
        report("drop_add_ln_bwd_warp", name(grid, t) + (t == 128 ? " (torch)" : ""), time_us(lnwb, grid, t, lnb_args),
               4 * bh);
        grid = std::min<unsigned>(2 * grid, parts / (t / 32));
        report("drop_add_ln_bwd_warp", name(grid, t), time_us(lnwb, grid, t, lnb_args), 4 * bh);
    }
    for (unsigned t : {64u, 128u, 192u}) {
        unsigned grid = std::min<unsigned>(resident(lnb, t), parts);
        report("drop_add_ln_bwd", name(grid, t), time_us(lnb, grid, t, lnb_args), 4 * bh);
        grid = std::min<unsigned>(2 * grid, parts);
        report("drop_add_ln_bwd", name(grid, t), time_us(lnb, grid, t, lnb_args), 4 * bh);
    }

    // The two launches on the same rows: the block launch's results in out, sum, dx, dresid and its partial sums
    // in dgp, dbp (one row per block); the warp launch's in the *2 buffers (one row per warp). Both backwards read
    // the same sum, mean and rstd (the last forward's), so that they are compared on their own.
    launch(lnf, rows, 64, lnf_args);
    std::vector<void*> lnwf_args = lnf_args;
    lnwf_args[4] = &out2.p;
    lnwf_args[5] = &sum2.p;
    launch(lnwf, rows / 4, 128, lnwf_args);
    compare<unsigned short, unsigned short>("ln_fwd_warp sum", sum2.get(), sum.get(), 0, 0);
    compare<unsigned short, unsigned short>("ln_fwd_warp out", out2.get(), out.get(), 1e-5, storage<unsigned short>::ulps());
    const unsigned gb_block = std::min<unsigned>(resident(lnb, 64), parts);
    const unsigned gb_warp = std::min<unsigned>(resident(lnwb, 128), parts / 4);
    launch(lnb, gb_block, 64, lnb_args);
    std::vector<void*> lnwb_args = lnb_args;
    lnwb_args[5] = &dx2.p;
    lnwb_args[6] = &dresid2.p;
    lnwb_args[7] = &dgp2.p;
    lnwb_args[8] = &dbp2.p;
    launch(lnwb, gb_warp, 128, lnwb_args);
    compare<unsigned short, unsigned short>("ln_bwd_warp dx", dx2.get(), dx.get(), 1e-5, storage<unsigned short>::ulps());
    compare<unsigned short, unsigned short>("ln_bwd_warp dresid", dresid2.get(), dresid.get(), 1e-5,
                                            storage<unsigned short>::ulps());
    auto column_totals = [&](const dbuf<float>& part, size_t n) {
        std::vector<float> v = part.get();
        std::vector<float> total(h, 0.0f);
        for (size_t b = 0; b < n; ++b)
            for (int c = 0; c < h; ++c) total[c] += v[b * h + c];
        return total;
    };
    compare<float, float>("ln_bwd_warp dgamma", column_totals(dgp2, 4 * (size_t)gb_warp), column_totals(dgp, gb_block),
                          1e-5, 0);
    compare<float, float>("ln_bwd_warp dbeta", column_totals(dbp2, 4 * (size_t)gb_warp), column_totals(dbp, gb_block),
                          1e-5, 0);

    {  // the embeddings at batch 1,024: BERT-base's tables (float32), a warp a row, 4 rows a block
        const long long vocab = 30522, positions = 512, types = 2;
        const size_t nf = (size_t)rows * h;
        std::vector<long long> ids(rows), pids(rows), tids(rows);
        for (int i = 0; i < rows; ++i) ids[i] = g() % vocab, pids[i] = i % 32, tids[i] = (i / 16) % 2;
        dbuf<float> word(draw<float>(g, vocab * h, 0.05f, 0)), pos(draw<float>(g, positions * h, 0.02f, 0)),
            type(draw<float>(g, types * h, 0.02f, 0)), eout(nf), edy(draw<float>(g, nf, 1, 0)), eds(nf);
        dbuf<long long> dids(ids), dpids(pids), dtids(tids);
        CUfunction ef = fn("convrep_embed_ln_drop_fwd_f32"), eb = fn("convrep_embed_ln_drop_bwd_f32");
        std::vector<void*> ef_args = {&word.p, &pos.p, &type.p, &dids.p, &dpids.p, &dtids.p, (void*)&vocab,
                                      (void*)&positions, (void*)&types, &gamma.p, &beta.p, &eout.p, &mean.p, &rstd.p,
                                      &rows, &h, &p, &eps, &seed, &offset, &no_ptr, &no_ptr};
        std::vector<void*> eb_args = {&edy.p, &word.p, &pos.p, &type.p, &dids.p, &dpids.p, &dtids.p, (void*)&vocab,
                                      (void*)&positions, (void*)&types, &mean.p, &rstd.p, &gamma.p, &eds.p, &dgp.p,
                                      &dbp.p, &rows, &h, &p, &seed, &offset, &no_ptr, &no_ptr};
        // bytes: the word rows read and the output written (float32); backward also reads dy
        report("embed_ln_drop_fwd", name(rows / 4, 128) + " (torch)", time_us(ef, rows / 4, 128, ef_args), 2 * nf * 4.0);
        const unsigned grid = std::min<unsigned>(resident(eb, 128), parts / 4);
        report("embed_ln_drop_bwd", name(grid, 128) + " (torch)", time_us(eb, grid, 128, eb_args), 3 * nf * 4.0);
    }

    for (unsigned t : {192u, 384u, 768u}) {  // 192: threads_for(3072)
        report("bias_gelu_fwd", name(rows, t) + (t == 192 ? " (torch)" : ""), time_us(gf, rows, t, gf_args), 2 * bw);
    }
    r = resident(gf, 192);
    report("bias_gelu_fwd", name(r, 192) + " looping", time_us(gf, r, 192, gf_args), 2 * bw);
    for (unsigned t : {192u, 384u, 768u}) {
        unsigned grid = std::min<unsigned>(resident(gb, t), parts);
        report("bias_gelu_bwd", name(grid, t) + (t == 192 ? " (torch)" : ""), time_us(gb, grid, t, gb_args), 3 * bw);
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: check SOURCE_FILE\n");
        return 2;
    }
    std::ifstream in(argv[1]);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string src = ss.str();

    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    int major, minor;
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));

    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, src.c_str(), "convrep_kernels.cu", 0, nullptr, nullptr);
    std::string arch = "--gpu-architecture=compute_" + std::to_string(major) + std::to_string(minor);
    const char* opts[] = {arch.c_str(), "--std=c++14", "-default-device"};  // internal/gpu/nvrtc's options
    nvrtcResult rc = nvrtcCompileProgram(prog, 3, opts);
    size_t logn;
    nvrtcGetProgramLogSize(prog, &logn);
    std::string log(logn, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    std::printf("nvrtc %s: %s\nlog: %s\n", arch.c_str(), nvrtcGetErrorString(rc), log.c_str());
    if (rc != NVRTC_SUCCESS) return 1;
    size_t ptxn;
    nvrtcGetPTXSize(prog, &ptxn);
    std::string ptx(ptxn, '\0');
    nvrtcGetPTX(prog, &ptx[0]);
    CU(cuModuleLoadData(&module, ptx.c_str()));
    const char* entries[] = {"convrep_drop_add_ln_fwd_f32",       "convrep_drop_add_ln_bwd_f32",
                             "convrep_drop_add_ln_fwd_warp_f32",  "convrep_drop_add_ln_bwd_warp_f32",
                             "convrep_bias_gelu_fwd_f32",         "convrep_bias_gelu_bwd_f32",
                             "convrep_drop_add_ln_fwd_bf16",      "convrep_drop_add_ln_bwd_bf16",
                             "convrep_drop_add_ln_fwd_warp_bf16", "convrep_drop_add_ln_bwd_warp_bf16",
                             "convrep_bias_gelu_fwd_bf16",        "convrep_bias_gelu_bwd_bf16",
                             "convrep_embed_ln_drop_fwd_f32",     "convrep_embed_ln_drop_bwd_f32"};
    for (auto e : entries) {
        CUfunction f = fn(e);
        int regs = 0, local = 0;
        cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
        std::printf("entry %s: %d registers, %d bytes local\n", e, regs, local);
    }

    ln_case<float>(18, 32, 32, 0.1f, 3);
    ln_case<float>(14, 32, 64, 0.0f, 1);
    ln_case<float>(7, 100, 32, 0.25f, 5);
    ln_case<float>(5, 768, 128, 0.1f, 2);
    ln_case<float>(3, 4096, 512, 0.1f, 7);
    ln_case<float>(2, 33, 1024, 0.1f, 4);
    ln_case<float>(256, 1024, 128, 0.1f, 80);
    ln_case<float>(16384, 768, 128, 0.1f, 264);
    ln_case<unsigned short>(18, 32, 32, 0.1f, 3);
    ln_case<unsigned short>(7, 100, 32, 0.25f, 5);
    ln_case<unsigned short>(5, 768, 128, 0.0f, 2);
    ln_case<unsigned short>(16384, 768, 128, 0.1f, 264);
    ln_case<unsigned short>(65536, 768, 64, 0.1f, 132 * 16);  // BERT-base at batch 1024, a block a row
    ln_case<float>(18, 32, 128, 0.1f, 3, true);                // a warp a row: the launch of rows up to 768 wide
    ln_case<float>(7, 100, 64, 0.25f, 2, true);
    ln_case<float>(5, 768, 128, 0.1f, 1, true);
    ln_case<float>(10, 350, 128, 0.1f, 2, true);
    ln_case<unsigned short>(7, 100, 128, 0.25f, 1, true);
    ln_case<unsigned short>(5, 768, 256, 0.0f, 2, true);
    ln_case<unsigned short>(65536, 768, 128, 0.1f, 132 * 3, true);  // BERT-base at batch 1024, internal/torch's launch
    embed_case(18, 32, true, 0.1f, 2);
    embed_case(7, 100, false, 0.25f, 1);
    embed_case(10, 768, true, 0.1f, 3);
    embed_case(4096, 768, true, 0.0f, 264);
    gelu_case<float>(18, 64, 32, 3);
    gelu_case<float>(7, 100, 32, 5);
    gelu_case<float>(64, 3072, 384, 16);
    gelu_case<unsigned short>(18, 64, 32, 3);
    gelu_case<unsigned short>(1000, 3072, 512, 132);
    bench(dev);
    std::printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
