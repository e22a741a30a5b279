// host.h: C entry points into the kernels' row functions compiled for the host, for the Go tests.
#ifndef CONVREP_KERNELS_HOST_H
#define CONVREP_KERNELS_HOST_H

#include <stdint.h>

// The widest row the host functions take: one lane holds a whole row's chunks in its arrays.
#define CONVREP_HOST_MAX_COLS 4096

#ifdef __cplusplus
extern "C" {
#endif

void convrep_host_philox4x32(const uint32_t ctr[4], const uint32_t key[2], int rounds, uint32_t out[4]);
float convrep_host_dropout_u(uint64_t seed, uint64_t offset, int64_t e);
// keep[i] = 1 where element first + i survives dropout with probability p of dropping.
void convrep_host_dropout_keep(uint64_t seed, uint64_t offset, int64_t first, int64_t n, float p, uint8_t* keep);
// The mask of the chunk e, ..., e+n-1 (1 <= n <= 4) as the row functions draw it: bit k for element e+k.
unsigned convrep_host_dropout_keep4(uint64_t seed, uint64_t offset, int64_t e, int n, float p);

// The entries of kernels.cu, run on the host. `lanes` lanes (threads here) cooperate on each row, as the
// threads of a block do on the device; `blocks` is the backward's grid size G. bf16 tensors are uint16_t bits.
void convrep_host_drop_add_ln_fwd_f32(const float* x, const float* resid, const float* gamma, const float* beta,
                                      float* out, float* sum, float* mean, float* rstd, int rows, int cols, float p,
                                      float eps, uint64_t seed, uint64_t offset, int lanes);
void convrep_host_drop_add_ln_fwd_bf16(const uint16_t* x, const uint16_t* resid, const float* gamma,
                                       const float* beta, uint16_t* out, uint16_t* sum, float* mean, float* rstd,
                                       int rows, int cols, float p, float eps, uint64_t seed, uint64_t offset,
                                       int lanes);
void convrep_host_drop_add_ln_bwd_f32(const float* dy, const float* sum, const float* mean, const float* rstd,
                                      const float* gamma, float* dx, float* dresid, float* dgamma_part,
                                      float* dbeta_part, int rows, int cols, float p, uint64_t seed, uint64_t offset,
                                      int blocks, int lanes);
void convrep_host_drop_add_ln_bwd_bf16(const uint16_t* dy, const uint16_t* sum, const float* mean,
                                       const float* rstd, const float* gamma, uint16_t* dx, uint16_t* dresid,
                                       float* dgamma_part, float* dbeta_part, int rows, int cols, float p,
                                       uint64_t seed, uint64_t offset, int blocks, int lanes);
void convrep_host_bias_gelu_fwd_f32(const float* x, const float* bias, float* out, int rows, int cols, int lanes);
void convrep_host_bias_gelu_fwd_bf16(const uint16_t* x, const float* bias, uint16_t* out, int rows, int cols,
                                     int lanes);
void convrep_host_bias_gelu_bwd_f32(const float* x, const float* bias, const float* dy, float* dx,
                                    float* dbias_part, int rows, int cols, int blocks, int lanes);
void convrep_host_bias_gelu_bwd_bf16(const uint16_t* x, const float* bias, const uint16_t* dy, uint16_t* dx,
                                     float* dbias_part, int rows, int cols, int blocks, int lanes);

// The embeddings' sum + LayerNorm + dropout (embeddings.cuh), float32 tables [vocab|positions|types, cols]; type
// and type_ids NULL where the family has no token types.
void convrep_host_embed_ln_drop_fwd_f32(const float* word, const float* pos, const float* type, const int64_t* ids,
                                        const int64_t* pos_ids, const int64_t* type_ids, int64_t vocab,
                                        int64_t positions, int64_t types, const float* gamma, const float* beta,
                                        float* out, float* mean, float* rstd, int rows, int cols, float p, float eps,
                                        uint64_t seed, uint64_t offset, int lanes);
void convrep_host_embed_ln_drop_bwd_f32(const float* dy, const float* word, const float* pos, const float* type,
                                        const int64_t* ids, const int64_t* pos_ids, const int64_t* type_ids,
                                        int64_t vocab, int64_t positions, int64_t types, const float* mean,
                                        const float* rstd, const float* gamma, float* ds, float* dgamma_part,
                                        float* dbeta_part, int rows, int cols, float p, uint64_t seed,
                                        uint64_t offset, int blocks, int lanes);

uint16_t convrep_host_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif

#endif
