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
// backend is "gloo" or "nccl"; rank 0 serves the store at addr:port, the others connect to it. device is the
// GPU the group is bound to (NCCL needs one; its collectives, barrier included, run with it current), or -1.
char *convrep_group_new(const char *backend, const char *addr, int port, int rank, int world, int device,
                        int64_t timeout_ms, convrep_group **out);
void convrep_group_free(convrep_group *g);
// op: 0 sum, 1 max, 2 min; in place.
char *convrep_allreduce(convrep_group *g, void *tensor, int op);
// Overwrites each tensor with rank root's, in place.
char *convrep_broadcast(convrep_group *g, void **tensors, int n, int root);
// *out is a new tensor: every rank's t stacked along dim 0 in rank order (t has the same shape on every rank).
char *convrep_allgather(convrep_group *g, void *t, void **out);
char *convrep_barrier(convrep_group *g);
// Gradient averaging overlapped with the backward pass, as DDP's reducer does it: a hook on each
// parameter's gradient accumulator marks it ready; buckets (consecutive parameters, at most bucket_bytes;
// give the parameters in the order backward reaches them, i.e. reversed) are all-reduced asynchronously, in
// bucket order on every rank, as soon as they and the buckets before them are ready.
typedef struct convrep_overlap convrep_overlap;
char *convrep_overlap_new(convrep_group *g, void **params, int n, int64_t bucket_bytes, convrep_overlap **out);
// Arms the hooks for the next backward pass (the last micro-batch of a step); unarmed passes only accumulate.
void convrep_overlap_arm(convrep_overlap *o);
// Each bucket is one flat buffer; a parameter's gradient becomes a view of it when its bucket is first sent,
// and autograd accumulates into that view from then on (DDP's gradient_as_bucket_view).
// After that backward pass: sends the buckets still waiting, waits for all, and divides the buffers in place:
// the gradients are then the means. Every rank sends every bucket; a parameter without a gradient on this
// rank counts as zeros and gets the mean when another rank had a gradient, and none when no rank had.
char *convrep_overlap_finish(convrep_overlap *o);
// The number of parameters whose gradient is a view of its bucket's buffer.
int convrep_overlap_views(convrep_overlap *o);
// The number of buckets the last armed backward pass sent before it ended (the rest went in finish).
int convrep_overlap_early(convrep_overlap *o);
// Disarms for good; the hooks stay registered but do nothing.
void convrep_overlap_free(convrep_overlap *o);
// 1 when this build compiled the backend in, else 0.
int convrep_has_backend(const char *backend);
#ifdef __cplusplus
}
#endif
#endif
