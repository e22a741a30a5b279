// autocast_state.h: the calling thread's autocast state, for the shim's own C++ (defined in autocast.cpp, over
// whichever of libtorch's per-device or device-type autocast functions this libtorch has).
#ifndef CONVREP_AUTOCAST_STATE_H
#define CONVREP_AUTOCAST_STATE_H
#include <ATen/ATen.h>
namespace convrep {
// Whether autocast is on for the device type (CUDA, else the CPU).
bool autocast_on(bool cuda);
// The dtype autocast casts a GEMM's inputs to on the device type (bf16 under precision = "bf16").
at::ScalarType autocast_dtype(bool cuda);
} // namespace convrep
#endif
