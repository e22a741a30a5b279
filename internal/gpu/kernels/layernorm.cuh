// layernorm.cuh: out = LayerNorm(dropout(x) + resid), forward and backward, one row at a time.
//
// LayerNorm (Ba, Kiros and Hinton, "Layer Normalization", 2016, §3, Eq. 4) over a row s of H = cols values:
//     mu = (1/H) Σ s_i,   sigma² = (1/H) Σ (s_i - mu)²,   xhat_i = (s_i - mu) / sqrt(sigma² + eps),
//     out_i = gamma_i · xhat_i + beta_i.
// Its gradient, with g_i = gamma_i · dy_i and rstd = 1/sqrt(sigma² + eps):
//     ds_i = rstd · (g_i - mean(g) - xhat_i · mean(g · xhat)),
//     dgamma_i = Σ_rows dy_i · xhat_i,   dbeta_i = Σ_rows dy_i,
// and through s = dropout(x) + resid: dresid = ds, dx = ds · keep/(1-p) with the mask of dropout.cuh.
//
// Each function is run by `lanes` cooperating lanes over the row's chunks of four columns (bf16.cuh): lane l
// handles chunks l, l + lanes, ..., at most K of them, held in registers between the passes, so the row is read
// once. block_sum (reduce.cuh) totals a value over the lanes. The host runs them with one lane and a K as large
// as the widest row; a device block runs them with threadIdx.x of blockDim.x and a small K, which needs
// ceil(cols/4) <= K·lanes (kernels.cu). Statistics are float whatever T is.
//
// The mean is taken about a pivot, the row's first value, which every lane computes for itself:
// mu = pivot + (1/H) Σ (s_i - pivot). A row of equal values so has mu equal to them exactly and variance 0,
// and values far from zero lose no precision to the offset; the variance is then a second pass about mu.
#ifndef CONVREP_LAYERNORM_CUH
#define CONVREP_LAYERNORM_CUH

// convrep_drop_add is s = dropout(x) + resid for element e, as T stores it.
template <class T>
CONVREP_HD float convrep_drop_add(const T* x, const T* resid, long long e, float p, float scale,
                                  unsigned long long seed, unsigned long long offset) {
    const float d = convrep_dropout_keep(seed, offset, e, p) ? convrep_load(x, e) * scale : 0.0f;
    return convrep_round<T>(d + convrep_load(resid, e));
}

// convrep_dropout_scale is 1/(1-p), the factor for kept elements.
CONVREP_HD float convrep_dropout_scale(float p) { return p == 0.0f ? 1.0f : 1.0f / (1.0f - p); }

// convrep_row_stats is the mean and 1/sqrt(variance + eps) of a row of `cols` values whose lane's chunks are s
// (as convrep_each_chunk gives them; the rest of s unused) and whose first value is pivot: the mean about the
// pivot, then the variance about the mean, each a lane's partial sum totalled by block_sum.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class Reduce>
CONVREP_HD void convrep_row_stats(const float (*s)[4], float pivot, int cols, float eps, int lane, int lanes,
                                  Reduce block_sum, float& mu, float& rs) {
    float shifted = 0.0f;
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int, int n) {
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            if (i < n) {
                shifted += s[k][i] - pivot;
            }
        }
    });
    mu = pivot + block_sum(shifted) / (float)cols;

    float sq = 0.0f;
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int, int n) {
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            const float d = s[k][i] - mu;
            if (i < n) {
                sq += d * d;
            }
        }
    });
    rs = 1.0f / sqrtf(block_sum(sq) / (float)cols + eps);
}

// convrep_ln_apply gives each of the lane's chunks s of a row of mean mu and 1/σ rs its LayerNorm output
// y = (s − mu)·rs·γ + β, to emit(k, c, n, y).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class Emit>
CONVREP_HD void convrep_ln_apply(const float (*s)[4], float mu, float rs, const float* gamma, const float* beta,
                                 int cols, int lane, int lanes, Emit emit) {
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float g[4], b[4], y[4];
        convrep_load4(gamma, c, n, g);
        convrep_load4(beta, c, n, b);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            y[i] = (s[k][i] - mu) * rs * g[i] + b[i];
        }
        emit(k, c, n, y);
    });
}

// convrep_drop_add_ln_fwd_row computes row `row`: sum = dropout(x) + resid, out = LayerNorm(sum), and
// mean[row], rstd[row].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_drop_add_ln_fwd_row(const T* x, const T* resid, const float* gamma, const float* beta,
                                            T* out, T* sum, float* mean, float* rstd, long long row, int cols,
                                            float p, float eps, unsigned long long seed,
                                            unsigned long long offset, int lane, int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const float scale = convrep_dropout_scale(p);
    const float pivot = convrep_drop_add(x, resid, base, p, scale, seed, offset);

    float s[K][4];  // the lane's chunks of the sum, as T stores them
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float xv[4], rv[4];
        convrep_load4(x, base + c, n, xv);
        convrep_load4(resid, base + c, n, rv);
        const unsigned int keep = convrep_dropout_keep4(seed, offset, base + c, n, p);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            s[k][i] = convrep_round<T>(((keep >> i) & 1u ? xv[i] * scale : 0.0f) + rv[i]);
        }
        convrep_store4(sum, base + c, n, s[k]);
    });
    float mu, rs;
    convrep_row_stats<K>(s, pivot, cols, eps, lane, lanes, block_sum, mu, rs);
    convrep_ln_apply<K>(s, mu, rs, gamma, beta, cols, lane, lanes,
                        [&](int, int c, int n, const float* y) { convrep_store4(out, base + c, n, y); });
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// convrep_ln_grad_row is LayerNorm's backward for one row of mean mu and 1/σ rs, whose output gradient the lane
// reads into d with load_d(c, n, d[k]) (its chunks, as convrep_each_chunk gives them, kept in registers) and whose
// input it reads with load_sum(c, n, v), each chunk twice: for the row's totals, then for the gradient (from the
// cache on a GPU the second time, so that a thread holds one array of the row, not three). It adds the row's d·x̂
// and d to the lane's column accumulators (dgamma_acc[k][i] and dbeta_acc[k][i] belong to column i of its k-th
// chunk) and gives each chunk's input gradient ds = rs·(γ·d − mean(γ·d) − x̂·mean(γ·d·x̂)) to emit(k, c, n, ds).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class LoadD, class LoadSum, class Emit, class Reduce>
CONVREP_HD void convrep_ln_grad_row(LoadD load_d, LoadSum load_sum, Emit emit, const float* gamma, float mu, float rs,
                                    float (*dgamma_acc)[4], float (*dbeta_acc)[4], int cols, int lane, int lanes,
                                    Reduce block_sum) {
    float d[K][4];
    float mg = 0.0f, mgx = 0.0f;  // Σ γ·d and Σ γ·d·x̂, then their means
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float sv[4], gv[4];
        load_d(c, n, d[k]);
        load_sum(c, n, sv);
        convrep_load4(gamma, c, n, gv);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            const float g = d[k][i] * gv[i];
            if (i < n) {
                mg += g;
                mgx += g * ((sv[i] - mu) * rs);
            }
        }
    });
    block_sum(mg, mgx);
    mg /= (float)cols;
    mgx /= (float)cols;

    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float sv[4], gv[4], ds[4];
        load_sum(c, n, sv);
        convrep_load4(gamma, c, n, gv);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            const float xhat = (sv[i] - mu) * rs;
            ds[i] = rs * (d[k][i] * gv[i] - mg - xhat * mgx);
            dgamma_acc[k][i] += d[k][i] * xhat;
            dbeta_acc[k][i] += d[k][i];
        }
        emit(k, c, n, ds);
    });
}

// convrep_drop_add_ln_bwd_row computes dx and dresid of row `row` from dy and adds the row's dy·xhat and dy
// to the lane's column accumulators (convrep_ln_grad_row).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_drop_add_ln_bwd_row(const T* dy, const T* sum, const float* mean, const float* rstd,
                                            const float* gamma, T* dx, T* dresid, float (*dgamma_acc)[4],
                                            float (*dbeta_acc)[4], long long row, int cols, float p,
                                            unsigned long long seed, unsigned long long offset, int lane,
                                            int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const float scale = convrep_dropout_scale(p);
    convrep_ln_grad_row<K>(
        [&](int c, int n, float* v) { convrep_load4(dy, base + c, n, v); },
        [&](int c, int n, float* v) { convrep_load4(sum, base + c, n, v); },
        [&](int, int c, int n, const float* ds) {
            const unsigned int keep = convrep_dropout_keep4(seed, offset, base + c, n, p);
            float dxv[4];
            CONVREP_UNROLL
            for (int i = 0; i < 4; ++i) {
                dxv[i] = (keep >> i) & 1u ? ds[i] * scale : 0.0f;
            }
            convrep_store4(dresid, base + c, n, ds);
            convrep_store4(dx, base + c, n, dxv);
        },
        gamma, mean[row], rstd[row], dgamma_acc, dbeta_acc, cols, lane, lanes, block_sum);
}

// convrep_drop_add_ln_bwd_block is block `block` of `blocks`: it runs the rows block, block + blocks, ...
// and writes its column sums to dgamma_part[block·cols + c] and dbeta_part[block·cols + c].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_drop_add_ln_bwd_block(const T* dy, const T* sum, const float* mean, const float* rstd,
                                              const float* gamma, T* dx, T* dresid, float* dgamma_part,
                                              float* dbeta_part, long long rows, int cols, float p,
                                              unsigned long long seed, unsigned long long offset, long long block,
                                              long long blocks, int lane, int lanes, Reduce block_sum) {
    float dgamma_acc[K][4] = {}, dbeta_acc[K][4] = {};
    for (long long row = block; row < rows; row += blocks) {
        convrep_drop_add_ln_bwd_row<K>(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_acc, dbeta_acc, row, cols, p,
                                       seed, offset, lane, lanes, block_sum);
    }
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        convrep_store4(dgamma_part, block * cols + c, n, dgamma_acc[k]);
        convrep_store4(dbeta_part, block * cols + c, n, dbeta_acc[k]);
    });
}

#endif
