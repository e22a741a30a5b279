// gelu.cuh: out = gelu(x + bias), forward and backward, one row at a time.
//
// GELU (Hendrycks and Gimpel, "Gaussian Error Linear Units (GELUs)", 2016, §2): gelu(v) = v·Φ(v) with Φ the
// standard normal CDF, Φ(v) = ½(1 + erf(v/√2)); this is the exact form HuggingFace calls "gelu", not the tanh
// approximation. Its derivative is gelu'(v) = Φ(v) + v·φ(v), φ(v) = exp(-v²/2)/√(2π).
//
// Lane l of `lanes` handles columns l, l + lanes, ...; no value crosses lanes, so these need no block_sum.
// The backward recomputes v = x + bias from the pre-activation x rather than reading the forward's output.
#ifndef CONVREP_GELU_CUH
#define CONVREP_GELU_CUH

CONVREP_HD float convrep_gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)); }

CONVREP_HD float convrep_gelu_grad(float v) {
    const float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
    const float pdf = expf(-0.5f * v * v) * 0.39894228040143267794f;  // 1/√(2π)
    return cdf + v * pdf;
}

template <class T>
CONVREP_HD void convrep_bias_gelu_fwd_row(const T* x, const float* bias, T* out, long long row, int cols, int lane,
                                          int lanes) {
    const long long base = row * (long long)cols;
    for (int c = lane; c < cols; c += lanes) {
        convrep_store(out, base + c, convrep_gelu(convrep_load(x, base + c) + bias[c]));
    }
}

// convrep_bias_gelu_bwd_row writes dx = dy·gelu'(x + bias) for row `row` and adds dx to the lane's column
// accumulators: dbias_acc[k] belongs to column lane + k·lanes.
template <class T>
CONVREP_HD void convrep_bias_gelu_bwd_row(const T* x, const float* bias, const T* dy, T* dx, float* dbias_acc,
                                          long long row, int cols, int lane, int lanes) {
    const long long base = row * (long long)cols;
    for (int c = lane, k = 0; c < cols; c += lanes, ++k) {
        const float d = convrep_load(dy, base + c) * convrep_gelu_grad(convrep_load(x, base + c) + bias[c]);
        convrep_store(dx, base + c, d);
        dbias_acc[k] += d;
    }
}

// convrep_bias_gelu_bwd_block is block `block` of `blocks`: rows block, block + blocks, ..., with its column
// sums of dx written to dbias_part[block·cols + c].
template <class T>
CONVREP_HD void convrep_bias_gelu_bwd_block(const T* x, const float* bias, const T* dy, T* dx, float* dbias_part,
                                            long long rows, int cols, long long block, long long blocks, int lane,
                                            int lanes, float* dbias_acc) {
    for (int c = lane, k = 0; c < cols; c += lanes, ++k) {
        dbias_acc[k] = 0.0f;
    }
    for (long long row = block; row < rows; row += blocks) {
        convrep_bias_gelu_bwd_row(x, bias, dy, dx, dbias_acc, row, cols, lane, lanes);
    }
    for (int c = lane, k = 0; c < cols; c += lanes, ++k) {
        dbias_part[block * cols + c] = dbias_acc[k];
    }
}

#endif
