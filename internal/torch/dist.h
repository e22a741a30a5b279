// convrep's C shim over libtorch's c10d: rendezvous through a TCPStore and the collectives of a process
// group (Gloo on CPU, NCCL on GPU) on gotch's tensor handles (each a torch::Tensor*).
#ifndef CONVREP_DIST_H
#define CONVREP_DIST_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct convrep_group convrep_group;
// Each returns NULL on success, or a malloc'ed error message the caller frees.
// backend is "gloo" or "nccl"; rank 0 serves the store at addr:port, the others connect to it.
char *convrep_group_new(const char *backend, const char *addr, int port, int rank, int world, int64_t timeout_ms,
                        convrep_group **out);
void convrep_group_free(convrep_group *g);
// Sums each tensor over the ranks in place and divides by the number of ranks. Tensors are packed into
// buckets of at most bucket_bytes (one dtype and device each); every bucket is sent before the first is awaited.
char *convrep_allreduce_mean(convrep_group *g, void **tensors, int n, int64_t bucket_bytes);
// op: 0 sum, 1 max, 2 min; in place.
char *convrep_allreduce(convrep_group *g, void *tensor, int op);
// Overwrites each tensor with rank root's, in place.
char *convrep_broadcast(convrep_group *g, void **tensors, int n, int root);
// *out is a new tensor: every rank's t stacked along dim 0 in rank order (t has the same shape on every rank).
char *convrep_allgather(convrep_group *g, void *t, void **out);
char *convrep_barrier(convrep_group *g);
// 1 when this build compiled the backend in, else 0.
int convrep_has_backend(const char *backend);
#ifdef __cplusplus
}
#endif
#endif
