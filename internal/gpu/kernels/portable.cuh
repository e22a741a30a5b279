// portable.cuh: what lets one source compile three ways, with no #include anywhere.
//
//   NVRTC (__CUDACC_RTC__) and nvcc (__CUDACC__) know __host__, __device__, __global__, __forceinline__,
//   erff, expf, sqrtf and the warp intrinsics without any header.
//   g++ (neither macro) gets the qualifiers defined empty here; the file that includes these headers on the
//   host (host/host.cpp) includes <cmath> and <cstring> first, which declare erff, expf, sqrtf and memcpy.
//
// The integer types are the built-in ones (unsigned int is 32 bits, unsigned long long 64 bits on every
// target we build for): NVRTC has no <cstdint>.
#ifndef CONVREP_PORTABLE_CUH
#define CONVREP_PORTABLE_CUH

#if !defined(__CUDACC__)
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#endif

#define CONVREP_HD __host__ __device__ __forceinline__

// CONVREP_UNROLL asks the device compiler to unroll the loop it precedes: a loop over a lane's chunks whose
// bound is a template constant, so that the chunk arrays it indexes stay in registers. g++ ignores it.
#if defined(__CUDACC__)
#define CONVREP_UNROLL _Pragma("unroll")
#else
#define CONVREP_UNROLL
#endif

// convrep_vload and convrep_vstore move one V (8 or 16 bytes) to or from an address aligned to sizeof(V): one
// vector load or store instruction on the device; a memcpy on the host, where the cast would break C++'s
// aliasing rules.
template <class V>
CONVREP_HD V convrep_vload(const void* p) {
#if defined(__CUDACC__)
    return *static_cast<const V*>(p);
#else
    V v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}

template <class V>
CONVREP_HD void convrep_vstore(void* p, V v) {
#if defined(__CUDACC__)
    *static_cast<V*>(p) = v;
#else
    memcpy(p, &v, sizeof v);
#endif
}

// convrep_aligned says whether p is a multiple of n bytes (n a power of two).
CONVREP_HD bool convrep_aligned(const void* p, unsigned long long n) {
    return ((unsigned long long)p & (n - 1)) == 0;
}

#endif
