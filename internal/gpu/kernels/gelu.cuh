// gelu.cuh: out = gelu(x + bias), forward and backward, one row at a time.
//
// GELU (Hendrycks and Gimpel, "Gaussian Error Linear Units (GELUs)", 2016, §2): gelu(v) = v·Φ(v) with Φ the
// standard normal CDF, Φ(v) = ½(1 + erf(v/√2)); this is the exact form HuggingFace calls "gelu", not the tanh
// approximation. Its derivative is gelu'(v) = Φ(v) + v·φ(v), φ(v) = exp(-v²/2)/√(2π).
//
// Lane l of `lanes` handles the chunks of four columns l, l + lanes, ... (layernorm.cuh); no value crosses
// lanes, so these need no block_sum.
// The backward recomputes v = x + bias from the pre-activation x rather than reading the forward's output.
#ifndef CONVREP_GELU_CUH
#define CONVREP_GELU_CUH

CONVREP_HD float convrep_gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)); }

CONVREP_HD float convrep_gelu_grad(float v) {
    const float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
    const float pdf = expf(-0.5f * v * v) * 0.39894228040143267794f;  // 1/√(2π)
    return cdf + v * pdf;
}

template <int K, class T>
CONVREP_HD void convrep_bias_gelu_fwd_row(const T* x, const float* bias, T* out, long long row, int cols, int lane,
                                          int lanes) {
    const long long base = row * (long long)cols;
    convrep_each_chunk<K>(cols, lane, lanes, [&](int, int c, int n) {
        float v[4], b[4];
        convrep_load4(x, base + c, n, v);
        convrep_load4(bias, c, n, b);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            v[i] = convrep_gelu(v[i] + b[i]);
        }
        convrep_store4(out, base + c, n, v);
    });
}

// convrep_bias_gelu_bwd_row writes dx = dy·gelu'(x + bias) for row `row` and adds dx to the lane's column
// accumulators: dbias_acc[k][i] belongs to column i of its k-th chunk.
template <int K, class T>
CONVREP_HD void convrep_bias_gelu_bwd_row(const T* x, const float* bias, const T* dy, T* dx, float (*dbias_acc)[4],
                                          long long row, int cols, int lane, int lanes) {
    const long long base = row * (long long)cols;
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float v[4], b[4], d[4];
        convrep_load4(x, base + c, n, v);
        convrep_load4(bias, c, n, b);
        convrep_load4(dy, base + c, n, d);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            d[i] *= convrep_gelu_grad(v[i] + b[i]);
            dbias_acc[k][i] += d[i];
        }
        convrep_store4(dx, base + c, n, d);
    });
}

// convrep_bias_gelu_bwd_block is block `block` of `blocks`: rows block, block + blocks, ..., with its column
// sums of dx written to dbias_part[block·cols + c]. It needs ceil(cols/4) <= K·lanes.
template <int K, class T>
CONVREP_HD void convrep_bias_gelu_bwd_block(const T* x, const float* bias, const T* dy, T* dx, float* dbias_part,
                                            long long rows, int cols, long long block, long long blocks, int lane,
                                            int lanes) {
    float dbias_acc[K][4] = {};
    for (long long row = block; row < rows; row += blocks) {
        convrep_bias_gelu_bwd_row<K>(x, bias, dy, dx, dbias_acc, row, cols, lane, lanes);
    }
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        convrep_store4(dbias_part, block * cols + c, n, dbias_acc[k]);
    });
}

#endif
