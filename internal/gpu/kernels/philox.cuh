// philox.cuh: the Philox4x32 counter-based generator (Salmon, Moraes, Dror and Shaw, "Parallel Random Numbers:
// As Easy as 1, 2, 3", SC 2011, §3.2 and Table 2), the generator libtorch's CUDA kernels and cuRAND use.
//
// A round maps the counter (c0, c1, c2, c3) under the key (k0, k1) to
//     (hi(M1·c2) ^ c1 ^ k0,  lo(M1·c2),  hi(M0·c0) ^ c3 ^ k1,  lo(M0·c0))
// with M0 = 0xD2511F53, M1 = 0xCD9E8D57; between rounds the key is bumped by the Weyl constants
// W0 = 0x9E3779B9 (golden ratio), W1 = 0xBB67AE85 (sqrt 3 - 1). Philox4x32-10 is ten rounds. The result is a
// pure function of (counter, key): any thread can draw any element's numbers without shared state, which is
// what lets backward regenerate forward's dropout mask.
#ifndef CONVREP_PHILOX_CUH
#define CONVREP_PHILOX_CUH

// convrep_mulhilo32 splits the 64-bit product a·b into its high and low words.
CONVREP_HD void convrep_mulhilo32(unsigned int a, unsigned int b, unsigned int* hi, unsigned int* lo) {
    unsigned long long p = (unsigned long long)a * (unsigned long long)b;
    *hi = (unsigned int)(p >> 32);
    *lo = (unsigned int)p;
}

// convrep_philox4x32 runs `rounds` rounds of Philox4x32 on ctr under key and writes the four words to out.
// rounds is 10 for the generator everyone uses; the known-answer tests also check 7.
CONVREP_HD void convrep_philox4x32(const unsigned int ctr[4], const unsigned int key[2], int rounds,
                                   unsigned int out[4]) {
    unsigned int c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    unsigned int k0 = key[0], k1 = key[1];
    for (int r = 0; r < rounds; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        unsigned int hi0, lo0, hi1, lo1;
        convrep_mulhilo32(0xD2511F53u, c0, &hi0, &lo0);
        convrep_mulhilo32(0xCD9E8D57u, c2, &hi1, &lo1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

// convrep_philox4x32_10 is Philox4x32-10.
CONVREP_HD void convrep_philox4x32_10(const unsigned int ctr[4], const unsigned int key[2], unsigned int out[4]) {
    convrep_philox4x32(ctr, key, 10, out);
}

#endif
