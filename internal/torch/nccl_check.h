// Included by dist.cpp after <torch/version.h> and <nccl.h>, in builds with NCCL; nccl_check_test.go compiles it
// against stand-in headers.
//
// ProcessGroupNCCL::Options (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp) holds an ncclConfig_t by value
// and its create() is inline: the shim allocates an Options the size nccl.h here gives, and libtorch's compiled
// constructor fills one the size of the NCCL libtorch was built with. ncclConfig_t grows between NCCL's minor
// releases (2.17 to 2.18 added fields), so any other minor release than libtorch's writes past the object or
// leaves part of it unset. The build is refused instead.
//
// cmd/setup reads the release of the NCCL libtorch actually loads from that library and passes its
// NCCL_VERSION_CODE as CONVREP_NCCL_LIB_VERSION_CODE (having already refused a mismatch, naming both); this
// repeats the check for a build whose include path changed since. Without that define only libtorch 2.1 is
// known (built with NCCL 2.18.1: PyTorch v2.1.0's .ci/docker/common/install_cuda.sh, install_121, installs
// nccl_2.18.1-1+cuda12.1, and torch 2.1.0's wheel requires nvidia-nccl-cu12==2.18.1).
#ifndef CONVREP_NCCL_CHECK_H
#define CONVREP_NCCL_CHECK_H

#if !defined(TORCH_VERSION_MAJOR) || !defined(NCCL_VERSION_CODE) || !defined(NCCL_VERSION)
#error "nccl_check.h needs <torch/version.h> and <nccl.h> first"
#endif

#if defined(CONVREP_NCCL_LIB_VERSION_CODE)
// NCCL_VERSION_CODE is X*10000 + Y*100 + Z (X*1000 + Y*100 + Z before 2.9): /100 keeps the major and minor.
#if NCCL_VERSION_CODE / 100 != CONVREP_NCCL_LIB_VERSION_CODE / 100
#error "nccl.h here is another NCCL release than the library libtorch loads (CONVREP_NCCL_LIB_VERSION_CODE): run make setup again, which names both"
#endif
#elif TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 1
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0) || NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
#error "libtorch 2.1 was built with NCCL 2.18.1, but nccl.h here is another release: install libnccl-dev=2.18.1-1+cuda12.1 (and libnccl2), or point CGO_CPPFLAGS=-I at NCCL 2.18's include folder"
#endif
#else
#error "the set-up did not say which NCCL this libtorch loads (no CONVREP_NCCL_LIB_VERSION_CODE): run make setup"
#endif

#endif
