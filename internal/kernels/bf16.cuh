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

CONVREP_HD float convrep_bf16_to_f32(unsigned short h) {
    convrep_f32_bits b;
    b.u = (unsigned int)h << 16;
    return b.f;
}

CONVREP_HD unsigned short convrep_f32_to_bf16(float f) {
    convrep_f32_bits b;
    b.f = f;
    unsigned int u = b.u;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (unsigned short)((u >> 16) | 0x0040u);  // quiet NaN, sign kept
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even; overflow rounds to infinity, as it should
    return (unsigned short)(u >> 16);
}

CONVREP_HD float convrep_load(const float* p, long long i) { return p[i]; }
CONVREP_HD float convrep_load(const unsigned short* p, long long i) { return convrep_bf16_to_f32(p[i]); }
CONVREP_HD void convrep_store(float* p, long long i, float v) { p[i] = v; }
CONVREP_HD void convrep_store(unsigned short* p, long long i, float v) { p[i] = convrep_f32_to_bf16(v); }

// convrep_round is v as T stores it: what a later load of a stored v gives back.
template <class T>
CONVREP_HD float convrep_round(float v);
template <>
CONVREP_HD float convrep_round<float>(float v) { return v; }
template <>
CONVREP_HD float convrep_round<unsigned short>(float v) { return convrep_bf16_to_f32(convrep_f32_to_bf16(v)); }

#endif
