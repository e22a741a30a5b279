// convrep's C shim over libtorch's autocast (mixed precision), beside shim.h.
#ifndef CONVREP_AUTOCAST_H
#define CONVREP_AUTOCAST_H
#ifdef __cplusplus
extern "C" {
#endif
// cuda selects the device type (1 CUDA, 0 CPU); dtypes are c10::ScalarType values (gotch's DType numbers).
// Both act on the calling thread's autocast state. Each returns NULL on success, or a malloc'ed error
// message the caller frees.
// enter switches autocast on (enabled 1, with dtype) or off (enabled 0) for a nested region.
char *convrep_autocast_enter(int cuda, int enabled, int dtype, int *prev_enabled, int *prev_dtype);
char *convrep_autocast_exit(int cuda, int prev_enabled, int prev_dtype);
// 1 when autocast is on for the device type on the calling thread, and its dtype in *dtype.
int convrep_autocast_enabled(int cuda, int *dtype);
#ifdef __cplusplus
}
#endif
#endif
