// CUDA graphs of a whole training step (train.cuda_graphs), beside shim.h.
#ifndef CONVREP_GRAPH_H
#define CONVREP_GRAPH_H
#ifdef __cplusplus
extern "C" {
#endif
// 1 when the shim was compiled against a CUDA libtorch (cmd/setup's -DCONVREP_CUDA), else 0.
int convrep_graph_compiled(void);
// The free and total memory of GPU device as the CUDA runtime reports them (cudaMemGetInfo); an error in a
// build without CUDA.
char *convrep_cuda_mem_info(int device, long long *free_bytes, long long *total_bytes);
// *out is a new graph for GPU device, with its own capture stream from libtorch's pool. NULL on success,
// else a malloc'ed error message (also on a CPU build).
char *convrep_graph_new(int device, void **out);
// Makes the graph's stream current on the calling thread, after it has waited for the work already queued
// on the thread's current stream (an event, not a host wait); convrep_graph_leave undoes it, the previous
// stream then waiting for the graph's. Between the two, the thread's libtorch calls go to the graph's stream.
char *convrep_graph_enter(void *graph);
char *convrep_graph_leave(void *graph);
// Between enter and leave: begins and ends the capture (the device is synchronised first; the default CUDA
// generator is registered by libtorch's CUDAGraph::capture_begin itself).
char *convrep_graph_capture_begin(void *graph);
char *convrep_graph_capture_end(void *graph);
// Launches the captured graph on the calling thread's current stream.
char *convrep_graph_replay(void *graph);
void convrep_graph_free(void *graph);
// dst.copy_(src, non_blocking=true): from pinned host memory or on the device, without a host wait.
char *convrep_copy_async(void *dst, void *src);
#ifdef __cplusplus
}
#endif
#endif
