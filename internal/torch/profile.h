// convrep's C shim for libtorch's Kineto profiler (what torch.profiler runs), beside shim.h.
#ifndef CONVREP_PROFILE_H
#define CONVREP_PROFILE_H
#ifdef __cplusplus
extern "C" {
#endif
// Starts profiling this thread's operators and, with cuda, the GPU's kernels (CUPTI). Returns NULL on success,
// or a malloc'ed error message the caller frees.
char *convrep_profile_start(int cuda);
// Stops profiling and writes the Chrome trace to path (the file torch.profiler's export_chrome_trace writes).
char *convrep_profile_stop(const char *path);
#ifdef __cplusplus
}
#endif
#endif
