// convrep's C shim for counting the ATen operators libtorch's dispatcher runs, beside shim.h.
#ifndef CONVREP_COUNT_H
#define CONVREP_COUNT_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// on 1 adds a global RecordFunction callback that counts every operator the dispatcher runs, on every thread
// and at every nesting level (the autograd engine's backward operators included); on 0 removes it. Returns
// NULL on success, or a malloc'ed error message the caller frees.
char *convrep_count_ops(int on);
// The operators counted so far, and the autograd nodes (backward functions) the engine ran.
int64_t convrep_ops(void);
int64_t convrep_backward_nodes(void);
// The libtorch version the shim was compiled against (torch/version.h's TORCH_VERSION, e.g. "1.13.0").
const char *convrep_torch_version(void);
#ifdef __cplusplus
}
#endif
#endif
