// convrep's C shim for counting libtorch's work, beside shim.h.
#ifndef CONVREP_OPCOUNT_H
#define CONVREP_OPCOUNT_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// Starts counting, on the calling thread and the threads its work moves to (autograd's), every ATen operator
// call (nested ones included: linear counts its matmul too) and every autograd node run by backward. Returns
// NULL, or a malloc'ed error message (counting already on).
char *convrep_opcount_start(void);
// Stops counting and gives the counts since start: the ops the program called (not from inside another op
// or an autograd node), all ops, and the autograd nodes.
void convrep_opcount_stop(int64_t *top, int64_t *ops, int64_t *nodes);
#ifdef __cplusplus
}
#endif
#endif
