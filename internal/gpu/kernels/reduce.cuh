// reduce.cuh: the block_sum argument of the row functions (layernorm.cuh).
//
// A row function is written for `lanes` cooperating lanes; where it needs a row total it calls block_sum on
// its lane's partial sum, and every lane gets the same total back. block_sum(a, b) sums two values at once.
//
//   convrep_one_lane_sum   the host's, with one lane: the partial sum is the total.
//   convrep_block_sum      the device's, with blockDim.x lanes (a multiple of 32, at most 1024): a butterfly
//                          of __shfl_xor_sync within each warp, then the per-warp totals through shared
//                          memory, added by every thread in warp order. No atomics: the order of additions is
//                          fixed, so results are bitwise reproducible run to run.
//   convrep_warp_sum       the device's, with the 32 lanes of one warp: the same butterfly and nothing else, no
//                          shared memory and no barrier, so each warp of a block goes through its own row at
//                          its own pace (kernels.cu's warp-per-row entries).
#ifndef CONVREP_REDUCE_CUH
#define CONVREP_REDUCE_CUH

struct convrep_one_lane_sum {
    CONVREP_HD float operator()(float v) const { return v; }
    CONVREP_HD void operator()(float& a, float& b) const {}
};

#if defined(__CUDACC__)
#define CONVREP_MAX_WARPS 32

__device__ __forceinline__ float convrep_warp_total(float v) {
    for (int m = 16; m > 0; m >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, m);
    }
    return v;
}

struct convrep_warp_sum {
    __device__ __forceinline__ float operator()(float v) const { return convrep_warp_total(v); }
    __device__ __forceinline__ void operator()(float& a, float& b) const {
        a = convrep_warp_total(a);
        b = convrep_warp_total(b);
    }
};

struct convrep_block_sum {
    float* smem;  // 2*CONVREP_MAX_WARPS floats of shared memory

    __device__ __forceinline__ float operator()(float v) const {
        float b = 0.0f;
        (*this)(v, b);
        return v;
    }

    __device__ __forceinline__ void operator()(float& a, float& b) const {
        a = convrep_warp_total(a);
        b = convrep_warp_total(b);
        const int warps = (int)(blockDim.x >> 5);
        __syncthreads();  // every thread has read the previous call's totals
        if ((threadIdx.x & 31) == 0) {
            smem[threadIdx.x >> 5] = a;
            smem[CONVREP_MAX_WARPS + (threadIdx.x >> 5)] = b;
        }
        __syncthreads();
        float ta = 0.0f, tb = 0.0f;
        for (int w = 0; w < warps; ++w) {
            ta += smem[w];
            tb += smem[CONVREP_MAX_WARPS + w];
        }
        a = ta;
        b = tb;
    }
};
#endif

#endif
