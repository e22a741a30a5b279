// embeddings.cuh: out = dropout(LayerNorm(word[id] + pos[pos_id] + type[type_id])), the embeddings of a
// BERT-like encoder, forward and backward, one row (token) at a time.
//
// BERT (Devlin et al., 2019, §3, Figure 2) makes a token's input representation as the sum of its token,
// segment and position embeddings; its implementation (HuggingFace's BertEmbeddings) then applies LayerNorm
// and dropout, in that order (the reverse of dropout + residual + LayerNorm in layernorm.cuh). The tables are
// float32 parameters [rows, cols], the ids int64; type is null in a family without token types. The sum is
// (word + pos) + type in float, as the composite adds them. LayerNorm is that of layernorm.cuh about the row's
// first value; the mask is dropout.cuh's for element row·cols + col.
//
// Backward, from dy (the gradient of out): dy' = dy · keep/(1-p) is the gradient of the LayerNorm's output,
// and with g = γ·dy' the sum's gradient is ds = rstd · (g - mean(g) - x̂ · mean(g · x̂)), as in layernorm.cuh;
// dγ = Σ_rows dy' · x̂, dβ = Σ_rows dy'. The tables' gradients are ds added into the rows the ids name, which the
// caller leaves to libtorch's embedding backward. The sum is not saved: backward gathers it again.
//
// An id outside its table makes the row's outputs NaN (and reads row 0 of that table instead): the kernel
// reads no memory outside the tables, and the NaN reaches the loss, where the trainer stops on it.
#ifndef CONVREP_EMBEDDINGS_CUH
#define CONVREP_EMBEDDINGS_CUH

// convrep_embed_rows are the three tables' rows of one token, as offsets of their first element; valid is false
// where an id is outside its table (its offset is then 0).
struct convrep_embed_rows {
    long long word, pos, type;
    bool valid;
};

CONVREP_HD long long convrep_embed_row(const long long* ids, long long row, long long rows, int cols, bool& valid) {
    const long long id = ids[row];
    if (id < 0 || id >= rows) {
        valid = false;
        return 0;
    }
    return id * (long long)cols;
}

CONVREP_HD convrep_embed_rows convrep_embed_rows_of(const long long* ids, const long long* pos_ids,
                                                    const long long* type_ids, const float* type, long long vocab,
                                                    long long positions, long long types, long long row, int cols) {
    convrep_embed_rows r;
    r.valid = true;
    r.word = convrep_embed_row(ids, row, vocab, cols, r.valid);
    r.pos = convrep_embed_row(pos_ids, row, positions, cols, r.valid);
    r.type = type != 0 ? convrep_embed_row(type_ids, row, types, cols, r.valid) : 0;
    return r;
}

// convrep_embed_load4 is the chunk c, ..., c+n-1 of the token's embedding sum.
CONVREP_HD void convrep_embed_load4(const float* word, const float* pos, const float* type,
                                    const convrep_embed_rows& r, int c, int n, float v[4]) {
    float pv[4], tv[4];
    convrep_load4(word, r.word + c, n, v);
    convrep_load4(pos, r.pos + c, n, pv);
    if (type != 0) {
        convrep_load4(type, r.type + c, n, tv);
    }
    CONVREP_UNROLL
    for (int i = 0; i < 4; ++i) {
        v[i] = type != 0 ? (v[i] + pv[i]) + tv[i] : v[i] + pv[i];
    }
}

// convrep_embed_ln_drop_fwd_row computes row `row`: out = dropout(LayerNorm(sum)), and mean[row], rstd[row].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_embed_ln_drop_fwd_row(const float* word, const float* pos, const float* type,
                                              const long long* ids, const long long* pos_ids,
                                              const long long* type_ids, long long vocab, long long positions,
                                              long long types, const float* gamma, const float* beta, T* out,
                                              float* mean, float* rstd, long long row, int cols, float p, float eps,
                                              unsigned long long seed, unsigned long long offset, int lane,
                                              int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const convrep_embed_rows r = convrep_embed_rows_of(ids, pos_ids, type_ids, type, vocab, positions, types, row, cols);
    float first[4];
    convrep_embed_load4(word, pos, type, r, 0, 1, first);

    float s[K][4];  // the lane's chunks of the sum
    convrep_each_chunk<K>(cols, lane, lanes,
                          [&](int k, int c, int n) { convrep_embed_load4(word, pos, type, r, c, n, s[k]); });
    float mu, rs;
    convrep_row_stats<K>(s, first[0], cols, eps, lane, lanes, block_sum, mu, rs);
    if (!r.valid) {
        mu = rs = convrep_nan();
    }

    const float scale = convrep_dropout_scale(p);
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float g[4], b[4], o[4];
        convrep_load4(gamma, c, n, g);
        convrep_load4(beta, c, n, b);
        const unsigned int keep = convrep_dropout_keep4(seed, offset, base + c, n, p);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            const float y = (s[k][i] - mu) * rs * g[i] + b[i];
            o[i] = (keep >> i) & 1u ? y * scale : 0.0f;
        }
        convrep_store4(out, base + c, n, o);
    });
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// convrep_embed_ln_drop_bwd_row writes ds, the gradient of row `row`'s embedding sum, from dy, and adds the row's
// dy'·x̂ and dy' to the lane's column accumulators, as convrep_drop_add_ln_bwd_row does.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_embed_ln_drop_bwd_row(const T* dy, const float* word, const float* pos, const float* type,
                                              const long long* ids, const long long* pos_ids,
                                              const long long* type_ids, long long vocab, long long positions,
                                              long long types, const float* mean, const float* rstd,
                                              const float* gamma, float* ds, float (*dgamma_acc)[4],
                                              float (*dbeta_acc)[4], long long row, int cols, float p,
                                              unsigned long long seed, unsigned long long offset, int lane,
                                              int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const convrep_embed_rows r = convrep_embed_rows_of(ids, pos_ids, type_ids, type, vocab, positions, types, row, cols);
    const float mu = mean[row], rs = rstd[row], scale = convrep_dropout_scale(p);

    // dy' stays in registers between the passes; the sum is gathered again for x̂ in each (from the cache on a
    // GPU the second time), as layernorm.cuh's backward re-reads its sum.
    float d[K][4];
    float mg = 0.0f, mgx = 0.0f;  // Σ g and Σ g·xhat, then their means
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        float sv[4], gv[4];
        convrep_load4(dy, base + c, n, d[k]);
        convrep_embed_load4(word, pos, type, r, c, n, sv);
        convrep_load4(gamma, c, n, gv);
        const unsigned int keep = convrep_dropout_keep4(seed, offset, base + c, n, p);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            d[k][i] = (keep >> i) & 1u ? d[k][i] * scale : 0.0f;
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
        float sv[4], gv[4], dsv[4];
        convrep_embed_load4(word, pos, type, r, c, n, sv);
        convrep_load4(gamma, c, n, gv);
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            const float xhat = (sv[i] - mu) * rs;
            dsv[i] = rs * (d[k][i] * gv[i] - mg - xhat * mgx);
            dgamma_acc[k][i] += d[k][i] * xhat;
            dbeta_acc[k][i] += d[k][i];
        }
        convrep_store4(ds, base + c, n, dsv);
    });
}

// convrep_embed_ln_drop_bwd_block is block `block` of `blocks`: it runs the rows block, block + blocks, ...
// and writes its column sums to dgamma_part[block·cols + c] and dbeta_part[block·cols + c].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_embed_ln_drop_bwd_block(const T* dy, const float* word, const float* pos, const float* type,
                                                const long long* ids, const long long* pos_ids,
                                                const long long* type_ids, long long vocab, long long positions,
                                                long long types, const float* mean, const float* rstd,
                                                const float* gamma, float* ds, float* dgamma_part,
                                                float* dbeta_part, long long rows, int cols, float p,
                                                unsigned long long seed, unsigned long long offset, long long block,
                                                long long blocks, int lane, int lanes, Reduce block_sum) {
    float dgamma_acc[K][4] = {}, dbeta_acc[K][4] = {};
    for (long long row = block; row < rows; row += blocks) {
        convrep_embed_ln_drop_bwd_row<K>(dy, word, pos, type, ids, pos_ids, type_ids, vocab, positions, types, mean,
                                         rstd, gamma, ds, dgamma_acc, dbeta_acc, row, cols, p, seed, offset, lane,
                                         lanes, block_sum);
    }
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        convrep_store4(dgamma_part, block * cols + c, n, dgamma_acc[k]);
        convrep_store4(dbeta_part, block * cols + c, n, dbeta_acc[k]);
    });
}

#endif
