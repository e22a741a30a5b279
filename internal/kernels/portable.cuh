// portable.cuh: what lets one source compile three ways, with no #include anywhere.
//
//   NVRTC (__CUDACC_RTC__) and nvcc (__CUDACC__) know __host__, __device__, __global__, __forceinline__,
//   erff, expf, sqrtf and the warp intrinsics without any header.
//   g++ (neither macro) gets the qualifiers defined empty here; the file that includes these headers on the
//   host (host/host.cpp) includes <cmath> first, which declares erff, expf and sqrtf.
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

#endif
