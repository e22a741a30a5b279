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
int convrep_get_num_threads(void);
// The default CPU generator's state (torch.get_rng_state): *out is malloc'ed, *len its size in bytes.
char *convrep_get_cpu_rng_state(uint8_t **out, int64_t *len);
char *convrep_set_cpu_rng_state(const uint8_t *data, int64_t len);
#ifdef __cplusplus
}
#endif
#endif
