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
// Each function is run by `lanes` cooperating lanes; lane l handles columns l, l + lanes, l + 2·lanes, ...
// and block_sum (reduce.cuh) totals a value over the lanes. The host runs them with lane 0 of 1; a device
// block runs them with threadIdx.x of blockDim.x. Statistics are float whatever T is.
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

// convrep_drop_add_ln_fwd_row computes row `row`: sum = dropout(x) + resid, out = LayerNorm(sum), and
// mean[row], rstd[row].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class T, class Reduce>
CONVREP_HD void convrep_drop_add_ln_fwd_row(const T* x, const T* resid, const float* gamma, const float* beta,
                                            T* out, T* sum, float* mean, float* rstd, long long row, int cols,
                                            float p, float eps, unsigned long long seed,
                                            unsigned long long offset, int lane, int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const float scale = convrep_dropout_scale(p);
    const float pivot = convrep_drop_add(x, resid, base, p, scale, seed, offset);

    float shifted = 0.0f;
    for (int c = lane; c < cols; c += lanes) {
        const float s = convrep_drop_add(x, resid, base + c, p, scale, seed, offset);
        convrep_store(sum, base + c, s);
        shifted += s - pivot;
    }
    const float mu = pivot + block_sum(shifted) / (float)cols;

    float sq = 0.0f;  // each lane reads back only what it wrote: no barrier needed
    for (int c = lane; c < cols; c += lanes) {
        const float d = convrep_load(sum, base + c) - mu;
        sq += d * d;
    }
    const float rs = 1.0f / sqrtf(block_sum(sq) / (float)cols + eps);

    for (int c = lane; c < cols; c += lanes) {
        const float xhat = (convrep_load(sum, base + c) - mu) * rs;
        convrep_store(out, base + c, xhat * gamma[c] + beta[c]);
    }
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// convrep_drop_add_ln_bwd_row computes dx and dresid of row `row` from dy and adds the row's dy·xhat and dy
// to the lane's column accumulators: dgamma_acc[k] and dbeta_acc[k] belong to column lane + k·lanes.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class T, class Reduce>
CONVREP_HD void convrep_drop_add_ln_bwd_row(const T* dy, const T* sum, const float* mean, const float* rstd,
                                            const float* gamma, T* dx, T* dresid, float* dgamma_acc,
                                            float* dbeta_acc, long long row, int cols, float p,
                                            unsigned long long seed, unsigned long long offset, int lane,
                                            int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const float mu = mean[row], rs = rstd[row];

    float mg = 0.0f, mgx = 0.0f;  // Σ g and Σ g·xhat, then their means
    for (int c = lane; c < cols; c += lanes) {
        const float g = convrep_load(dy, base + c) * gamma[c];
        const float xhat = (convrep_load(sum, base + c) - mu) * rs;
        mg += g;
        mgx += g * xhat;
    }
    block_sum(mg, mgx);
    mg /= (float)cols;
    mgx /= (float)cols;

    const float scale = convrep_dropout_scale(p);
    for (int c = lane, k = 0; c < cols; c += lanes, ++k) {
        const long long e = base + c;
        const float d = convrep_load(dy, e);
        const float xhat = (convrep_load(sum, e) - mu) * rs;
        const float ds = rs * (d * gamma[c] - mg - xhat * mgx);
        convrep_store(dresid, e, ds);
        convrep_store(dx, e, convrep_dropout_keep(seed, offset, e, p) ? ds * scale : 0.0f);
        dgamma_acc[k] += d * xhat;
        dbeta_acc[k] += d;
    }
}

// convrep_drop_add_ln_bwd_block is block `block` of `blocks`: it runs the rows block, block + blocks, ...
// and writes its column sums to dgamma_part[block·cols + c] and dbeta_part[block·cols + c]. The accumulators
// hold ceil((cols - lane)/lanes) floats each (cols on the host, at most 8 on the device).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class T, class Reduce>
CONVREP_HD void convrep_drop_add_ln_bwd_block(const T* dy, const T* sum, const float* mean, const float* rstd,
                                              const float* gamma, T* dx, T* dresid, float* dgamma_part,
                                              float* dbeta_part, long long rows, int cols, float p,
                                              unsigned long long seed, unsigned long long offset, long long block,
                                              long long blocks, int lane, int lanes, Reduce block_sum,
                                              float* dgamma_acc, float* dbeta_acc) {
    for (int c = lane, k = 0; c < cols; c += lanes, ++k) {
        dgamma_acc[k] = 0.0f;
        dbeta_acc[k] = 0.0f;
    }
    for (long long row = block; row < rows; row += blocks) {
        convrep_drop_add_ln_bwd_row(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_acc, dbeta_acc, row, cols, p,
                                    seed, offset, lane, lanes, block_sum);
    }
    for (int c = lane, k = 0; c < cols; c += lanes, ++k) {
        dgamma_part[block * cols + c] = dgamma_acc[k];
        dbeta_part[block * cols + c] = dbeta_acc[k];
    }
}

#endif
