// dropout.cuh: the dropout mask, one function of (seed, offset, element, p) shared by the host tests and every
// device entry, forward and backward (Srivastava et al. 2014 for dropout; Salmon et al. 2011 for Philox).
//
// Element e (row*cols + col of the flat tensor) is word e%4 of Philox4x32-10 with
//     key     = {lo32(seed), hi32(seed)}
//     counter = {lo32(offset/4 + e/4), hi32(offset/4 + e/4), 0, 0}
// and u = (word >> 8)·2^-24, a float in [0, 1) with 24 exact bits. The element is kept when u >= p and scaled
// by 1/(1-p). The caller reserves 4·ceil(rows·cols/4) numbers of the CUDA generator's Philox offset per call,
// so these counters (subsequence 0, i.e. counter words 2 and 3 zero) never meet libtorch's own draws, which
// put the thread index in the subsequence.
#ifndef CONVREP_DROPOUT_CUH
#define CONVREP_DROPOUT_CUH

// convrep_dropout_words are the four Philox words of element group g = offset/4 + e/4.
CONVREP_HD void convrep_dropout_words(unsigned long long seed, unsigned long long g, unsigned int r[4]) {
    const unsigned int ctr[4] = {(unsigned int)g, (unsigned int)(g >> 32), 0u, 0u};
    const unsigned int key[2] = {(unsigned int)seed, (unsigned int)(seed >> 32)};
    convrep_philox4x32_10(ctr, key, r);
}

// convrep_dropout_word_u is the uniform number of element e from its group's words r.
CONVREP_HD float convrep_dropout_word_u(const unsigned int r[4], long long e) {
    const int w = (int)(e & 3);  // e >= 0; a select, not r[w], keeps r in registers on the device
    const unsigned int bits = w == 0 ? r[0] : w == 1 ? r[1] : w == 2 ? r[2] : r[3];
    return (float)(bits >> 8) * (1.0f / 16777216.0f);
}

// convrep_dropout_u is the uniform number in [0, 1) that decides element e.
CONVREP_HD float convrep_dropout_u(unsigned long long seed, unsigned long long offset, long long e) {
    unsigned int r[4];
    convrep_dropout_words(seed, offset / 4 + (unsigned long long)(e / 4), r);
    return convrep_dropout_word_u(r, e);
}

// convrep_dropout_keep says whether element e survives dropout with probability p of dropping. p == 0 keeps
// every element without drawing a number.
CONVREP_HD bool convrep_dropout_keep(unsigned long long seed, unsigned long long offset, long long e, float p) {
    return p == 0.0f || convrep_dropout_u(seed, offset, e) >= p;
}

// convrep_dropout_keep4 is the mask of the chunk e, ..., e+n-1 (1 <= n <= 4): bit k set where element e+k
// survives, as convrep_dropout_keep says. It draws Philox once per group of four the chunk touches: once for a
// chunk that starts at a multiple of 4, where one draw serves all four elements; twice where it straddles two.
CONVREP_HD unsigned int convrep_dropout_keep4(unsigned long long seed, unsigned long long offset, long long e, int n,
                                              float p) {
    if (p == 0.0f) {
        return (1u << n) - 1u;
    }
    unsigned int r[4];
    unsigned long long drawn = offset / 4 + (unsigned long long)(e / 4);
    convrep_dropout_words(seed, drawn, r);
    unsigned int keep = 0u;
    for (int k = 0; k < n; ++k) {
        const unsigned long long g = offset / 4 + (unsigned long long)((e + k) / 4);
        if (g != drawn) {
            convrep_dropout_words(seed, g, r);
            drawn = g;
        }
        if (convrep_dropout_word_u(r, e + k) >= p) {
            keep |= 1u << k;
        }
    }
    return keep;
}

#endif
