// host.cpp: the kernels' row functions compiled by g++, behind the C functions of host.h.
//
// The headers are the ones NVRTC compiles (../*.cuh, in Source's order); here __host__ and __device__ are
// empty (portable.cuh), <cmath> supplies erff, expf and sqrtf, and <cstring> memcpy. The functions below drive the row functions
// the way kernels.cu does: a block of `lanes` lanes per row, and for the backward `blocks` blocks each
// writing its partial column sums. With one lane the reduction is convrep_one_lane_sum; with more, each lane
// is a thread and host_lanes_sum totals over them as the device's block reduction does, barrier and all.
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "../portable.cuh"
#include "../bf16.cuh"
#include "../philox.cuh"
#include "../dropout.cuh"
#include "../reduce.cuh"
#include "../layernorm.cuh"
#include "../embeddings.cuh"
#include "../gelu.cuh"
#include "host.h"

namespace {

// host_lanes is a block of threads: run calls body(lane) for every lane at once and waits for all of them.
class host_lanes {
   public:
    explicit host_lanes(int lanes) : lanes_(lanes), a_(lanes), b_(lanes), barrier_(lanes) {}

    void run(const std::function<void(int)>& body) {
        std::vector<std::thread> threads;
        for (int lane = 0; lane < lanes_; ++lane) {
            threads.emplace_back(body, lane);
        }
        for (auto& t : threads) {
            t.join();
        }
    }

    // sum is a block_sum for the row functions: every lane posts its value, waits for the others, and
    // adds the posts in lane order, then waits again so the slots may be reused.
    struct sum {
        host_lanes* block;
        int lane;
        float operator()(float v) const {
            float b = 0.0f;
            (*this)(v, b);
            return v;
        }
        void operator()(float& a, float& b) const {
            block->a_[lane] = a;
            block->b_[lane] = b;
            block->barrier_.arrive_and_wait();
            float ta = 0.0f, tb = 0.0f;
            for (int l = 0; l < block->lanes_; ++l) {
                ta += block->a_[l];
                tb += block->b_[l];
            }
            block->barrier_.arrive_and_wait();
            a = ta;
            b = tb;
        }
    };

   private:
    int lanes_;
    std::vector<float> a_, b_;
    std::barrier<> barrier_;
};

// on_lanes runs body(lane, reduce) on `lanes` lanes: inline with convrep_one_lane_sum for one lane, on
// threads with host_lanes::sum for more.
template <class Body>
void on_lanes(int lanes, Body body) {
    if (lanes == 1) {
        body(0, convrep_one_lane_sum{});
        return;
    }
    host_lanes block(lanes);
    block.run([&](int lane) { body(lane, host_lanes::sum{&block, lane}); });
}

// with_k calls body.template operator()<K>() with the row functions' K: a device entry's, where a row fits
// its lanes, so the host runs the device's very loops (kernels.cu: 4 chunks of four a lane for a block a row,
// CONVREP_MAX_CHUNKS_PER_LANE; 6 for a warp a row, CONVREP_WARP_CHUNKS_PER_LANE, with 32 lanes); else
// kChunks, enough for a row of CONVREP_HOST_MAX_COLS columns on one lane (host.go refuses wider rows).
constexpr int kBlockChunks = 4;
constexpr int kWarpChunks = 6;
constexpr int kChunks = CONVREP_HOST_MAX_COLS / 4;

template <class Body>
void with_k(int cols, int lanes, Body body) {
    if (convrep_chunks(cols) <= kBlockChunks * lanes) {
        body.template operator()<kBlockChunks>();
    } else if (lanes == 32 && convrep_chunks(cols) <= kWarpChunks * lanes) {
        body.template operator()<kWarpChunks>();
    } else {
        body.template operator()<kChunks>();
    }
}

template <class T>
void ln_fwd(const T* x, const T* resid, const float* gamma, const float* beta, T* out, T* sum, float* mean,
            float* rstd, int rows, int cols, float p, float eps, uint64_t seed, uint64_t offset, int lanes) {
    with_k(cols, lanes, [&]<int K>() {
        on_lanes(lanes, [&](int lane, auto block_sum) {
            for (long long row = 0; row < rows; ++row) {
                convrep_drop_add_ln_fwd_row<K>(x, resid, gamma, beta, out, sum, mean, rstd, row, cols, p, eps, seed,
                                               offset, lane, lanes, block_sum);
            }
        });
    });
}

template <class T>
void ln_bwd(const T* dy, const T* sum, const float* mean, const float* rstd, const float* gamma, T* dx, T* dresid,
            float* dgamma_part, float* dbeta_part, int rows, int cols, float p, uint64_t seed, uint64_t offset,
            int blocks, int lanes) {
    with_k(cols, lanes, [&]<int K>() {
        for (int b = 0; b < blocks; ++b) {
            on_lanes(lanes, [&](int lane, auto block_sum) {
                convrep_drop_add_ln_bwd_block<K>(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_part, dbeta_part,
                                                 rows, cols, p, seed, offset, b, blocks, lane, lanes, block_sum);
            });
        }
    });
}

template <class T>
void gelu_fwd(const T* x, const float* bias, T* out, int rows, int cols, int lanes) {
    with_k(cols, lanes, [&]<int K>() {
        on_lanes(lanes, [&](int lane, auto) {
            for (long long row = 0; row < rows; ++row) {
                convrep_bias_gelu_fwd_row<K>(x, bias, out, row, cols, lane, lanes);
            }
        });
    });
}

template <class T>
void gelu_bwd(const T* x, const float* bias, const T* dy, T* dx, float* dbias_part, int rows, int cols, int blocks,
              int lanes) {
    with_k(cols, lanes, [&]<int K>() {
        for (int b = 0; b < blocks; ++b) {
            on_lanes(lanes, [&](int lane, auto) {
                convrep_bias_gelu_bwd_block<K>(x, bias, dy, dx, dbias_part, rows, cols, b, blocks, lane, lanes);
            });
        }
    });
}

// The tables and ids as the row functions take them (long long ids, which int64_t need not be).
convrep_embed_tables tables(const float* word, const float* pos, const float* type, const int64_t* ids,
                            const int64_t* pos_ids, const int64_t* type_ids, int64_t vocab, int64_t positions,
                            int64_t types) {
    auto ll = [](const int64_t* p) { return reinterpret_cast<const long long*>(p); };
    return {word, pos, type, ll(ids), ll(pos_ids), ll(type_ids), vocab, positions, types};
}

}  // namespace

extern "C" {

void convrep_host_philox4x32(const uint32_t ctr[4], const uint32_t key[2], int rounds, uint32_t out[4]) {
    convrep_philox4x32(ctr, key, rounds, out);
}

float convrep_host_dropout_u(uint64_t seed, uint64_t offset, int64_t e) { return convrep_dropout_u(seed, offset, e); }

void convrep_host_dropout_keep(uint64_t seed, uint64_t offset, int64_t first, int64_t n, float p, uint8_t* keep) {
    for (int64_t i = 0; i < n; ++i) {
        keep[i] = convrep_dropout_keep(seed, offset, first + i, p) ? 1 : 0;
    }
}

unsigned convrep_host_dropout_keep4(uint64_t seed, uint64_t offset, int64_t e, int n, float p) {
    return convrep_dropout_keep4(seed, offset, e, n, p);
}

void convrep_host_drop_add_ln_fwd_f32(const float* x, const float* resid, const float* gamma, const float* beta,
                                      float* out, float* sum, float* mean, float* rstd, int rows, int cols, float p,
                                      float eps, uint64_t seed, uint64_t offset, int lanes) {
    ln_fwd(x, resid, gamma, beta, out, sum, mean, rstd, rows, cols, p, eps, seed, offset, lanes);
}

void convrep_host_drop_add_ln_fwd_bf16(const uint16_t* x, const uint16_t* resid, const float* gamma,
                                       const float* beta, uint16_t* out, uint16_t* sum, float* mean, float* rstd,
                                       int rows, int cols, float p, float eps, uint64_t seed, uint64_t offset,
                                       int lanes) {
    ln_fwd(x, resid, gamma, beta, out, sum, mean, rstd, rows, cols, p, eps, seed, offset, lanes);
}

void convrep_host_drop_add_ln_bwd_f32(const float* dy, const float* sum, const float* mean, const float* rstd,
                                      const float* gamma, float* dx, float* dresid, float* dgamma_part,
                                      float* dbeta_part, int rows, int cols, float p, uint64_t seed, uint64_t offset,
                                      int blocks, int lanes) {
    ln_bwd(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_part, dbeta_part, rows, cols, p, seed, offset, blocks,
           lanes);
}

void convrep_host_drop_add_ln_bwd_bf16(const uint16_t* dy, const uint16_t* sum, const float* mean,
                                       const float* rstd, const float* gamma, uint16_t* dx, uint16_t* dresid,
                                       float* dgamma_part, float* dbeta_part, int rows, int cols, float p,
                                       uint64_t seed, uint64_t offset, int blocks, int lanes) {
    ln_bwd(dy, sum, mean, rstd, gamma, dx, dresid, dgamma_part, dbeta_part, rows, cols, p, seed, offset, blocks,
           lanes);
}

void convrep_host_bias_gelu_fwd_f32(const float* x, const float* bias, float* out, int rows, int cols, int lanes) {
    gelu_fwd(x, bias, out, rows, cols, lanes);
}

void convrep_host_bias_gelu_fwd_bf16(const uint16_t* x, const float* bias, uint16_t* out, int rows, int cols,
                                     int lanes) {
    gelu_fwd(x, bias, out, rows, cols, lanes);
}

void convrep_host_bias_gelu_bwd_f32(const float* x, const float* bias, const float* dy, float* dx,
                                    float* dbias_part, int rows, int cols, int blocks, int lanes) {
    gelu_bwd(x, bias, dy, dx, dbias_part, rows, cols, blocks, lanes);
}

void convrep_host_bias_gelu_bwd_bf16(const uint16_t* x, const float* bias, const uint16_t* dy, uint16_t* dx,
                                     float* dbias_part, int rows, int cols, int blocks, int lanes) {
    gelu_bwd(x, bias, dy, dx, dbias_part, rows, cols, blocks, lanes);
}

uint16_t convrep_host_f32_to_bf16(float f) { return convrep_f32_to_bf16(f); }

void convrep_host_embed_ln_drop_fwd_f32(const float* word, const float* pos, const float* type, const int64_t* ids,
                                        const int64_t* pos_ids, const int64_t* type_ids, int64_t vocab,
                                        int64_t positions, int64_t types, const float* gamma, const float* beta,
                                        float* out, float* mean, float* rstd, int rows, int cols, float p, float eps,
                                        uint64_t seed, uint64_t offset, int lanes) {
    const convrep_embed_tables t = tables(word, pos, type, ids, pos_ids, type_ids, vocab, positions, types);
    with_k(cols, lanes, [&]<int K>() {
        on_lanes(lanes, [&](int lane, auto block_sum) {
            for (long long row = 0; row < rows; ++row) {
                convrep_embed_ln_drop_fwd_row<K>(t, gamma, beta, out, mean, rstd, row, cols, p, eps, seed, offset, lane,
                                                 lanes, block_sum);
            }
        });
    });
}

void convrep_host_embed_ln_drop_bwd_f32(const float* dy, const float* word, const float* pos, const float* type,
                                        const int64_t* ids, const int64_t* pos_ids, const int64_t* type_ids,
                                        int64_t vocab, int64_t positions, int64_t types, const float* mean,
                                        const float* rstd, const float* gamma, float* ds, float* dgamma_part,
                                        float* dbeta_part, int rows, int cols, float p, uint64_t seed,
                                        uint64_t offset, int blocks, int lanes) {
    const convrep_embed_tables t = tables(word, pos, type, ids, pos_ids, type_ids, vocab, positions, types);
    with_k(cols, lanes, [&]<int K>() {
        for (int b = 0; b < blocks; ++b) {
            on_lanes(lanes, [&](int lane, auto block_sum) {
                convrep_embed_ln_drop_bwd_block<K>(dy, t, mean, rstd, gamma, ds, dgamma_part, dbeta_part, rows, cols,
                                                   p, seed, offset, b, blocks, lane, lanes, block_sum);
            });
        }
    });
}

}  // extern "C"
