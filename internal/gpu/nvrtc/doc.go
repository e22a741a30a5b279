// Package nvrtc compiles convrep's own CUDA kernels to PTX at run time with NVIDIA's NVRTC, as PyTorch's
// jiterator does (aten/src/ATen/native/cuda/jit_utils.cpp): no nvcc on the machine and no link-time dependency
// on CUDA. The library is loaded with dlopen on first use, from $CONVREP_NVRTC when set, else by soname
// (libnvrtc.so.13, .12, .11.2, libnvrtc.so) as the dynamic loader finds it; the set-up puts the folder of a
// PyTorch wheel's or $CUDA_HOME's libnvrtc on convrep's RUNPATH, and installs Debian's libnvrtc11.2 on CI.
//
// Compile turns one program into PTX for one virtual architecture (compute_80, compute_90, ...); Cached does the
// same through a folder of PTX files keyed by everything the PTX depends on, so that a run compiles only what
// changed. The package calls no CUDA driver: loading the PTX is the caller's (internal/torch).
package nvrtc
