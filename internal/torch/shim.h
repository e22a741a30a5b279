// convrep's C shim over libtorch for what gotch does not expose.
#ifndef CONVREP_SHIM_H
#define CONVREP_SHIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// Each returns NULL on success, or a malloc'ed error message the caller frees.
char *convrep_manual_seed(uint64_t seed);
char *convrep_set_num_threads(int n);
// Deterministic kernels only (torch.use_deterministic_algorithms(on)), cuDNN deterministic and not
// benchmarking: an op without a deterministic kernel then fails naming itself instead of running.
char *convrep_set_deterministic(int on);
// 1 when deterministic algorithms are on.
int convrep_deterministic(void);
int convrep_get_num_threads(void);
// device is a GPU's index, or -1 for the CPU. The default generator's state (torch.get_rng_state,
// torch.cuda.get_rng_state): *out is malloc'ed, *len its size in bytes.
char *convrep_get_rng_state(int device, uint8_t **out, int64_t *len);
char *convrep_set_rng_state(int device, const uint8_t *data, int64_t len);
// Seeds that device's default generator alone.
char *convrep_seed_rng(int device, uint64_t seed);
// Makes a GPU the calling thread's current device (fails in a CPU build).
char *convrep_set_cuda_device(int device);
#ifdef __cplusplus
}
#endif
#endif
