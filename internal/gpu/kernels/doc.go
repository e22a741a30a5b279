// Package kernels holds convrep's CUDA kernels as source text, for internal/torch to compile with NVRTC at run
// time and launch with the driver API: the fused dropout + residual add + LayerNorm and bias + GELU of every
// BERT-like layer, forward and backward, for float32 and bf16 storage, and the embeddings' lookups + LayerNorm +
// dropout for float32 tables.
//
// # One source, two compilers
//
// The math of a row is written once, as __host__ __device__ template functions of layernorm.cuh, embeddings.cuh
// and gelu.cuh:
//
//	template <int K, class T, class Reduce>
//	__host__ __device__ void convrep_drop_add_ln_fwd_row(..., long long row, ..., int lane, int lanes, Reduce block_sum)
//
// T is the storage type (float, or unsigned short holding bf16 bits; bf16.cuh loads and stores it, four
// elements at a time, and all arithmetic is float). A row is cut into chunks of four columns; lane of lanes
// says which chunks a caller owns (lane, lane + lanes, ..., at most K, kept in registers), and block_sum
// totals a value over all lanes (reduce.cuh). The device entries of kernels.cu pass threadIdx.x, blockDim.x
// and a warp-shuffle + shared-memory block reduction (a block a row), or the lane within a warp, 32 and warp
// shuffles alone (LayerNorm's warp-a-row entries, for rows of up to 768 columns); package host compiles the
// same headers with g++, passing lane 0 of 1 and an identity reduction (or several threads with a barrier
// reduction, to stand in for a block or a warp), so the functions the Go tests check are the ones the GPU runs.
//
// The dropout mask (dropout.cuh) is a pure function of (seed, offset, element, p) on Philox4x32-10
// (philox.cuh; Salmon et al., SC 2011), so forward and backward, host and device, draw the same mask; one draw
// gives the four elements of a chunk.
//
// # No headers
//
// NVRTC compiles Source with no include path: the program includes nothing (no cuda_bf16.h, no curand), and
// Source joins the files in the order of Files, each after a #line directive. On the host the qualifiers are
// defined empty (portable.cuh) and <cmath> and <cstring> come from the including file.
//
// # Entries
//
// Entries lists the extern "C" __global__ functions; their parameters are documented in kernels.cu and
// fixed: internal/torch launches them by name with cuLaunchKernel.
//
// # Checks
//
// go test ./internal/gpu/kernels/... checks, without a GPU: Entries against the source, that the source includes
// nothing and parses as C++ with the device built-ins declared, Philox against Random123's known answers,
// the mask's statistics, and every forward and backward against fp64 and libtorch (package host). On a
// machine with a GPU, devcheck/run.sh compiles Source with NVRTC, launches every entry through the driver
// API and holds the results to the host build of the same row functions, bit for bit across two runs.
package kernels
