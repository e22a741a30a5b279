// kernels.cu: the extern "C" entry points that internal/torch launches with cuLaunchKernel. Each is a thin
// loop over the rows of its block that calls the row functions of layernorm.cuh and gelu.cuh; the host tests run
// the very same row functions. Suffix _f32: T = float; suffix _bf16: T = unsigned short (bf16 bits).
//
// Two launches of dropout + residual + LayerNorm:
//   block per row (convrep_drop_add_ln_{fwd,bwd}_*): lane = threadIdx.x, lanes = blockDim.x,
//     K = CONVREP_MAX_CHUNKS_PER_LANE and the block reduction of reduce.cuh. blockDim.x a multiple of 32, at
//     most 1024, with ceil(cols/4) <= K · blockDim.x (a thread keeps its chunks in registers).
//   warp per row (convrep_drop_add_ln_{fwd,bwd}_warp_*): each warp of a block a row of its own, lane =
//     threadIdx.x % 32, lanes = 32, K = CONVREP_WARP_CHUNKS_PER_LANE, the totals by warp shuffles alone (no
//     shared memory, no __syncthreads), so rows of up to 768 columns. A warp never waits for another, and a
//     block of four warps keeps more rows in flight on an SM than a block a row does with its barriers: the
//     launch NVIDIA's tuned LayerNorm kernels use at hidden size 768 (apex/contrib/csrc/layer_norm's
//     ln_fwd_768.cu and ln_bwd_768.cu register one CTA a row, WARPS_M = 4 rows a CTA, WARPS_N = 1).
// Bias + GELU has the block-per-row launch only; the embeddings' sum + LayerNorm + dropout (embeddings.cuh) the
// warp-per-row launch only, for float32 tables (its output float32, as the tables'), rows of up to 768 columns.
//
// Forward entries: one block per row, or per blockDim.x/32 rows for the warp entries (a grid smaller than that
// also works: the rows loop). Backward entries: any gridDim.x = G >= 1; block b writes row b of the [G, cols]
// partial column sums (warp entries: warp w of block b writes row b·W + w of [G·W, cols], W = blockDim.x/32),
// which the caller adds up. Pointers aligned to 16 bytes (float) or 8 (bf16) and cols a multiple of 4 let
// every chunk move in one vector instruction; anything else is still right, element by element.
#ifndef CONVREP_KERNELS_CU
#define CONVREP_KERNELS_CU

#define CONVREP_MAX_CHUNKS_PER_LANE 4
#define CONVREP_WARP_CHUNKS_PER_LANE 6

template <class T>
__device__ __forceinline__ void convrep_drop_add_ln_fwd(const T* x, const T* resid, const float* gamma,
                                                        const float* beta, T* out, T* sum, float* mean, float* rstd,
                                                        int rows, int cols, float p, float eps,
                                                        unsigned long long seed, unsigned long long offset) {
    __shared__ float smem[2 * CONVREP_MAX_WARPS];
    const convrep_block_sum block_sum = {smem};
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        convrep_drop_add_ln_fwd_row<CONVREP_MAX_CHUNKS_PER_LANE>(x, resid, gamma, beta, out, sum, mean, rstd, row,
                                                                 cols, p, eps, seed, offset, (int)threadIdx.x,
                                                                 (int)blockDim.x, block_sum);
    }
}

template <class T>
__device__ __forceinline__ void convrep_drop_add_ln_bwd(const T* dy, const T* sum, const float* mean,
                                                        const float* rstd, const float* gamma, T* dx, T* dresid,
                                                        float* dgamma_part, float* dbeta_part, int rows, int cols,
                                                        float p, unsigned long long seed,
                                                        unsigned long long offset) {
    __shared__ float smem[2 * CONVREP_MAX_WARPS];
    const convrep_block_sum block_sum = {smem};
    convrep_drop_add_ln_bwd_block<CONVREP_MAX_CHUNKS_PER_LANE>(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_part,
                                                               dbeta_part, rows, cols, p, seed, offset, blockIdx.x,
                                                               gridDim.x, (int)threadIdx.x, (int)blockDim.x,
                                                               block_sum);
}

// The warp-per-row launch: warp `warp` of `warps` in the grid, lane threadIdx.x % 32.
__device__ __forceinline__ long long convrep_warp_index() {
    return (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
}
__device__ __forceinline__ long long convrep_warp_count() { return (long long)gridDim.x * (blockDim.x >> 5); }

template <class T>
__device__ __forceinline__ void convrep_drop_add_ln_fwd_warp(const T* x, const T* resid, const float* gamma,
                                                             const float* beta, T* out, T* sum, float* mean,
                                                             float* rstd, int rows, int cols, float p, float eps,
                                                             unsigned long long seed, unsigned long long offset) {
    for (long long row = convrep_warp_index(); row < rows; row += convrep_warp_count()) {
        convrep_drop_add_ln_fwd_row<CONVREP_WARP_CHUNKS_PER_LANE>(x, resid, gamma, beta, out, sum, mean, rstd, row,
                                                                  cols, p, eps, seed, offset, (int)(threadIdx.x & 31),
                                                                  32, convrep_warp_sum());
    }
}

template <class T>
__device__ __forceinline__ void convrep_drop_add_ln_bwd_warp(const T* dy, const T* sum, const float* mean,
                                                             const float* rstd, const float* gamma, T* dx,
                                                             T* dresid, float* dgamma_part, float* dbeta_part,
                                                             int rows, int cols, float p, unsigned long long seed,
                                                             unsigned long long offset) {
    convrep_drop_add_ln_bwd_block<CONVREP_WARP_CHUNKS_PER_LANE>(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_part,
                                                                dbeta_part, rows, cols, p, seed, offset,
                                                                convrep_warp_index(), convrep_warp_count(),
                                                                (int)(threadIdx.x & 31), 32, convrep_warp_sum());
}

template <class T>
__device__ __forceinline__ void convrep_bias_gelu_fwd(const T* x, const float* bias, T* out, int rows, int cols) {
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        convrep_bias_gelu_fwd_row<CONVREP_MAX_CHUNKS_PER_LANE>(x, bias, out, row, cols, (int)threadIdx.x,
                                                               (int)blockDim.x);
    }
}

template <class T>
__device__ __forceinline__ void convrep_bias_gelu_bwd(const T* x, const float* bias, const T* dy, T* dx,
                                                      float* dbias_part, int rows, int cols) {
    convrep_bias_gelu_bwd_block<CONVREP_MAX_CHUNKS_PER_LANE>(x, bias, dy, dx, dbias_part, rows, cols, blockIdx.x,
                                                             gridDim.x, (int)threadIdx.x, (int)blockDim.x);
}

// The Philox key and counter base of a launch, as at::cuda::philox::unpack reads libtorch's PhiloxCudaState:
// outside a CUDA graph capture seed and offset are the values; while one is captured the generator gives
// pointers to its seed and offset, which each replay rewrites, and offset holds the offset within the graph.
__device__ __forceinline__ void convrep_philox_unpack(unsigned long long& seed, unsigned long long& offset,
                                                      const long long* seed_ptr, const long long* offset_ptr) {
    if (seed_ptr != 0) {
        seed = (unsigned long long)*seed_ptr;
        offset += (unsigned long long)*offset_ptr;
    }
}

// The dropout + residual + LayerNorm entries of one launch (LAUNCH: empty for a block per row, _warp for a warp
// per row) over element type T (SUFFIX: _f32 or _bf16): the Philox state unpacked, then the rows.
#define CONVREP_DROP_ADD_LN_ENTRIES(LAUNCH, SUFFIX, T)                                                              \
    extern "C" __global__ void convrep_drop_add_ln_fwd##LAUNCH##SUFFIX(                                             \
        const T* x, const T* resid, const float* gamma, const float* beta, T* out, T* sum, float* mean,             \
        float* rstd, int rows, int cols, float p, float eps, unsigned long long seed, unsigned long long offset,     \
        const long long* seed_ptr, const long long* offset_ptr) {                                                   \
        convrep_philox_unpack(seed, offset, seed_ptr, offset_ptr);                                                  \
        convrep_drop_add_ln_fwd##LAUNCH(x, resid, gamma, beta, out, sum, mean, rstd, rows, cols, p, eps, seed,      \
                                        offset);                                                                    \
    }                                                                                                               \
    extern "C" __global__ void convrep_drop_add_ln_bwd##LAUNCH##SUFFIX(                                             \
        const T* dy, const T* sum, const float* mean, const float* rstd, const float* gamma, T* dx, T* dresid,     \
        float* dgamma_part, float* dbeta_part, int rows, int cols, float p, unsigned long long seed,                \
        unsigned long long offset, const long long* seed_ptr, const long long* offset_ptr) {                        \
        convrep_philox_unpack(seed, offset, seed_ptr, offset_ptr);                                                  \
        convrep_drop_add_ln_bwd##LAUNCH(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_part, dbeta_part, rows, cols, \
                                        p, seed, offset);                                                           \
    }

CONVREP_DROP_ADD_LN_ENTRIES(, _f32, float)
CONVREP_DROP_ADD_LN_ENTRIES(_warp, _f32, float)
CONVREP_DROP_ADD_LN_ENTRIES(, _bf16, unsigned short)
CONVREP_DROP_ADD_LN_ENTRIES(_warp, _bf16, unsigned short)

// T = float.

extern "C" __global__ void convrep_embed_ln_drop_fwd_f32(
    const float* word, const float* pos, const float* type, const long long* ids, const long long* pos_ids,
    const long long* type_ids, long long vocab, long long positions, long long types, const float* gamma,
    const float* beta, float* out, float* mean, float* rstd, int rows, int cols, float p, float eps,
    unsigned long long seed, unsigned long long offset, const long long* seed_ptr, const long long* offset_ptr) {
    convrep_philox_unpack(seed, offset, seed_ptr, offset_ptr);
    const convrep_embed_tables t = {word, pos, type, ids, pos_ids, type_ids, vocab, positions, types};
    for (long long row = convrep_warp_index(); row < rows; row += convrep_warp_count()) {
        convrep_embed_ln_drop_fwd_row<CONVREP_WARP_CHUNKS_PER_LANE>(t, gamma, beta, out, mean, rstd, row, cols, p, eps,
                                                                    seed, offset, (int)(threadIdx.x & 31), 32,
                                                                    convrep_warp_sum());
    }
}

extern "C" __global__ void convrep_embed_ln_drop_bwd_f32(
    const float* dy, const float* word, const float* pos, const float* type, const long long* ids,
    const long long* pos_ids, const long long* type_ids, long long vocab, long long positions, long long types,
    const float* mean, const float* rstd, const float* gamma, float* ds, float* dgamma_part, float* dbeta_part,
    int rows, int cols, float p, unsigned long long seed, unsigned long long offset, const long long* seed_ptr,
    const long long* offset_ptr) {
    convrep_philox_unpack(seed, offset, seed_ptr, offset_ptr);
    const convrep_embed_tables t = {word, pos, type, ids, pos_ids, type_ids, vocab, positions, types};
    convrep_embed_ln_drop_bwd_block<CONVREP_WARP_CHUNKS_PER_LANE>(
        dy, t, mean, rstd, gamma, ds, dgamma_part, dbeta_part, rows, cols, p, seed, offset, convrep_warp_index(),
        convrep_warp_count(), (int)(threadIdx.x & 31), 32, convrep_warp_sum());
}

extern "C" __global__ void convrep_bias_gelu_fwd_f32(const float* x, const float* bias, float* out, int rows,
                                                   int cols) {
    convrep_bias_gelu_fwd(x, bias, out, rows, cols);
}

extern "C" __global__ void convrep_bias_gelu_bwd_f32(const float* x, const float* bias, const float* dy, float* dx,
                                                   float* dbias_part, int rows, int cols) {
    convrep_bias_gelu_bwd(x, bias, dy, dx, dbias_part, rows, cols);
}

// T = unsigned short (bf16 bits).

extern "C" __global__ void convrep_bias_gelu_fwd_bf16(const unsigned short* x, const float* bias, unsigned short* out, int rows,
                                                   int cols) {
    convrep_bias_gelu_fwd(x, bias, out, rows, cols);
}

extern "C" __global__ void convrep_bias_gelu_bwd_bf16(const unsigned short* x, const float* bias, const unsigned short* dy, unsigned short* dx,
                                                   float* dbias_part, int rows, int cols) {
    convrep_bias_gelu_bwd(x, bias, dy, dx, dbias_part, rows, cols);
}

#endif
