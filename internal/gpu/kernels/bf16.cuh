// bf16.cuh: bfloat16 stored as its 16 bits in an unsigned short, converted by hand (no cuda_bf16.h).
//
// A bf16 is the high half of an IEEE binary32, so a load shifts its bits up; a store rounds the low 16 bits
// away to nearest, ties to even, and keeps a NaN a NaN (rounding could otherwise carry a NaN's payload into the
// exponent and make it an infinity). The row functions read and write T through convrep_load and convrep_store,
// so the same template serves float and bf16 storage; all arithmetic is in float.
#ifndef CONVREP_BF16_CUH
#define CONVREP_BF16_CUH

union convrep_f32_bits {
    float f;
    unsigned int u;
};

// convrep_nan is a quiet NaN.
CONVREP_HD float convrep_nan() {
    convrep_f32_bits b;
    b.u = 0x7fc00000u;
    return b.f;
}

CONVREP_HD float convrep_bf16_to_f32(unsigned short h) {
    convrep_f32_bits b;
    b.u = (unsigned int)h << 16;
    return b.f;
}

// On a GPU of compute capability 8.0 or later a conversion is one instruction, cvt.rn.bf16.f32 (two at once with
// cvt.rn.bf16x2.f32), which rounds to nearest even as the code below does; only a NaN's bits differ (the
// instruction gives the canonical NaN 0x7fff), and a NaN it stays.
CONVREP_HD unsigned short convrep_f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    convrep_f32_bits b;
    b.f = f;
    unsigned int u = b.u;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (unsigned short)((u >> 16) | 0x0040u);  // quiet NaN, sign kept
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even; overflow rounds to infinity, as it should
    return (unsigned short)(u >> 16);
#endif
}

// convrep_pack_bf16x2 is lo and hi rounded to bf16 in one word, lo in the low half (little-endian order).
CONVREP_HD unsigned int convrep_pack_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned int w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));  // the first source goes to the high half
    return w;
#else
    return (unsigned int)convrep_f32_to_bf16(lo) | ((unsigned int)convrep_f32_to_bf16(hi) << 16);
#endif
}

CONVREP_HD float convrep_load(const float* p, long long i) { return p[i]; }
CONVREP_HD float convrep_load(const unsigned short* p, long long i) { return convrep_bf16_to_f32(p[i]); }
CONVREP_HD void convrep_store(float* p, long long i, float v) { p[i] = v; }
CONVREP_HD void convrep_store(unsigned short* p, long long i, float v) { p[i] = convrep_f32_to_bf16(v); }

// A chunk is up to four consecutive elements i, ..., i+n-1 (1 <= n <= 4) of one row. convrep_load4 reads one
// into v[0..n-1] and zeros the rest of v; convrep_store4 writes v[0..n-1]. A whole chunk at an aligned address
// moves in one vector instruction (16 bytes of float, 8 of bf16), the rest element by element: the same values
// either way. bf16 bits pack little-endian, element i in the low half of the first word.
// convrep_chunks is how many chunks of four a row of cols columns has; chunk j starts at column 4j and holds
// convrep_chunk_len of them.
CONVREP_HD int convrep_chunks(int cols) { return (cols + 3) / 4; }
CONVREP_HD int convrep_chunk_len(int cols, int j) { return cols - 4 * j < 4 ? cols - 4 * j : 4; }

// convrep_each_chunk calls f(k, c, n) for each chunk lane l of `lanes` owns in a row of cols columns: its k-th,
// chunk j = l + k·lanes for k < K while j < convrep_chunks(cols), which starts at column c = 4j and holds n
// columns. K is a compile-time bound, so that the device compiler unrolls the loop and arrays that f indexes by
// k stay in registers.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int K, class F>
CONVREP_HD void convrep_each_chunk(int cols, int lane, int lanes, F f) {
    const int chunks = convrep_chunks(cols);
    CONVREP_UNROLL
    for (int k = 0; k < K; ++k) {
        const int j = lane + k * lanes;
        if (j < chunks) {
            f(k, 4 * j, convrep_chunk_len(cols, j));
        }
    }
}

struct alignas(16) convrep_f32x4 {
    float v[4];
};
struct alignas(8) convrep_bf16x4 {
    unsigned int lo, hi;
};

CONVREP_HD void convrep_load4(const float* p, long long i, int n, float v[4]) {
    if (n == 4 && convrep_aligned(p + i, 16)) {
        const convrep_f32x4 w = convrep_vload<convrep_f32x4>(p + i);
        v[0] = w.v[0];
        v[1] = w.v[1];
        v[2] = w.v[2];
        v[3] = w.v[3];
        return;
    }
    for (int k = 0; k < 4; ++k) {
        v[k] = k < n ? p[i + k] : 0.0f;
    }
}

CONVREP_HD void convrep_load4(const unsigned short* p, long long i, int n, float v[4]) {
    if (n == 4 && convrep_aligned(p + i, 8)) {
        const convrep_bf16x4 w = convrep_vload<convrep_bf16x4>(p + i);
        v[0] = convrep_bf16_to_f32((unsigned short)(w.lo & 0xffffu));
        v[1] = convrep_bf16_to_f32((unsigned short)(w.lo >> 16));
        v[2] = convrep_bf16_to_f32((unsigned short)(w.hi & 0xffffu));
        v[3] = convrep_bf16_to_f32((unsigned short)(w.hi >> 16));
        return;
    }
    for (int k = 0; k < 4; ++k) {
        v[k] = k < n ? convrep_bf16_to_f32(p[i + k]) : 0.0f;
    }
}

CONVREP_HD void convrep_store4(float* p, long long i, int n, const float v[4]) {
    if (n == 4 && convrep_aligned(p + i, 16)) {
        convrep_vstore(p + i, convrep_f32x4{{v[0], v[1], v[2], v[3]}});
        return;
    }
    for (int k = 0; k < n; ++k) {
        p[i + k] = v[k];
    }
}

CONVREP_HD void convrep_store4(unsigned short* p, long long i, int n, const float v[4]) {
    if (n == 4 && convrep_aligned(p + i, 8)) {
        convrep_vstore(p + i, convrep_bf16x4{convrep_pack_bf16x2(v[0], v[1]), convrep_pack_bf16x2(v[2], v[3])});
        return;
    }
    for (int k = 0; k < n; ++k) {
        p[i + k] = convrep_f32_to_bf16(v[k]);
    }
}

// convrep_round is v as T stores it: what a later load of a stored v gives back.
template <class T>
CONVREP_HD float convrep_round(float v);
template <>
CONVREP_HD float convrep_round<float>(float v) { return v; }
template <>
CONVREP_HD float convrep_round<unsigned short>(float v) { return convrep_bf16_to_f32(convrep_f32_to_bf16(v)); }

#endif
