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

// convrep_embed_tables are the three tables and each token's row in them.
struct convrep_embed_tables {
    const float *word, *pos, *type;  // [vocab|positions|types, cols]; type null: no token types
    const long long *ids, *pos_ids, *type_ids;
    long long vocab, positions, types;  // the tables' rows
};

// convrep_embed_rows are a token's rows in the tables, as offsets of their first element; valid is false where
// an id is outside its table (its offset is then 0).
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

CONVREP_HD convrep_embed_rows convrep_embed_rows_of(const convrep_embed_tables& t, long long row, int cols) {
    convrep_embed_rows r;
    r.valid = true;
    r.word = convrep_embed_row(t.ids, row, t.vocab, cols, r.valid);
    r.pos = convrep_embed_row(t.pos_ids, row, t.positions, cols, r.valid);
    r.type = t.type != 0 ? convrep_embed_row(t.type_ids, row, t.types, cols, r.valid) : 0;
    return r;
}

// convrep_embed_load4 is the chunk c, ..., c+n-1 of the token's embedding sum.
CONVREP_HD void convrep_embed_load4(const convrep_embed_tables& t, const convrep_embed_rows& r, int c, int n,
                                    float v[4]) {
    float pv[4], tv[4];
    convrep_load4(t.word, r.word + c, n, v);
    convrep_load4(t.pos, r.pos + c, n, pv);
    if (t.type != 0) {
        convrep_load4(t.type, r.type + c, n, tv);
    }
    CONVREP_UNROLL
    for (int i = 0; i < 4; ++i) {
        v[i] = t.type != 0 ? (v[i] + pv[i]) + tv[i] : v[i] + pv[i];
    }
}

// convrep_embed_ln_drop_fwd_row computes row `row`: out = dropout(LayerNorm(sum)), and mean[row], rstd[row].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_embed_ln_drop_fwd_row(const convrep_embed_tables& t, const float* gamma, const float* beta,
                                              T* out, float* mean, float* rstd, long long row, int cols, float p,
                                              float eps, unsigned long long seed, unsigned long long offset, int lane,
                                              int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const convrep_embed_rows r = convrep_embed_rows_of(t, row, cols);
    float first[4];
    convrep_embed_load4(t, r, 0, 1, first);

    float s[K][4];  // the lane's chunks of the sum
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) { convrep_embed_load4(t, r, c, n, s[k]); });
    float mu, rs;
    convrep_row_stats<K>(s, first[0], cols, eps, lane, lanes, block_sum, mu, rs);
    if (!r.valid) {
        mu = rs = convrep_nan();
    }

    const float scale = convrep_dropout_scale(p);
    convrep_ln_apply<K>(s, mu, rs, gamma, beta, cols, lane, lanes, [&](int, int c, int n, const float* y) {
        const unsigned int keep = convrep_dropout_keep4(seed, offset, base + c, n, p);
        float o[4];
        CONVREP_UNROLL
        for (int i = 0; i < 4; ++i) {
            o[i] = (keep >> i) & 1u ? y[i] * scale : 0.0f;
        }
        convrep_store4(out, base + c, n, o);
    });
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// convrep_embed_ln_drop_bwd_row writes ds, the gradient of row `row`'s embedding sum, from dy, and adds the row's
// dy'·x̂ and dy' to the lane's column accumulators (convrep_ln_grad_row, which gathers the sum twice).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_embed_ln_drop_bwd_row(const T* dy, const convrep_embed_tables& t, const float* mean,
                                              const float* rstd, const float* gamma, float* ds,
                                              float (*dgamma_acc)[4], float (*dbeta_acc)[4], long long row, int cols,
                                              float p, unsigned long long seed, unsigned long long offset, int lane,
                                              int lanes, Reduce block_sum) {
    const long long base = row * (long long)cols;
    const convrep_embed_rows r = convrep_embed_rows_of(t, row, cols);
    const float scale = convrep_dropout_scale(p);
    convrep_ln_grad_row<K>(
        [&](int c, int n, float* v) {  // dy' = dy·keep/(1-p), the LayerNorm output's gradient
            convrep_load4(dy, base + c, n, v);
            const unsigned int keep = convrep_dropout_keep4(seed, offset, base + c, n, p);
            CONVREP_UNROLL
            for (int i = 0; i < 4; ++i) {
                v[i] = (keep >> i) & 1u ? v[i] * scale : 0.0f;
            }
        },
        [&](int c, int n, float* v) { convrep_embed_load4(t, r, c, n, v); },
        [&](int, int c, int n, const float* g) { convrep_store4(ds, base + c, n, g); }, gamma, mean[row], rstd[row],
        dgamma_acc, dbeta_acc, cols, lane, lanes, block_sum);
}

// convrep_embed_ln_drop_bwd_block is block `block` of `blocks`: it runs the rows block, block + blocks, ...
// and writes its column sums to dgamma_part[block·cols + c] and dbeta_part[block·cols + c].
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class T, class Reduce>
CONVREP_HD void convrep_embed_ln_drop_bwd_block(const T* dy, const convrep_embed_tables& t, const float* mean,
                                                const float* rstd, const float* gamma, float* ds, float* dgamma_part,
                                                float* dbeta_part, long long rows, int cols, float p,
                                                unsigned long long seed, unsigned long long offset, long long block,
                                                long long blocks, int lane, int lanes, Reduce block_sum) {
    float dgamma_acc[K][4] = {}, dbeta_acc[K][4] = {};
    for (long long row = block; row < rows; row += blocks) {
        convrep_embed_ln_drop_bwd_row<K>(dy, t, mean, rstd, gamma, ds, dgamma_acc, dbeta_acc, row, cols, p, seed,
                                         offset, lane, lanes, block_sum);
    }
    convrep_each_chunk<K>(cols, lane, lanes, [&](int k, int c, int n) {
        convrep_store4(dgamma_part, block * cols + c, n, dgamma_acc[k]);
        convrep_store4(dbeta_part, block * cols + c, n, dbeta_acc[k]);
    });
}

#endif
