#include "autocast.h"
#include "handles.h"
#include "autocast_state.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>
#include <cstdlib>
#include <cstring>
#include <exception>

// libtorch 2.4 replaced the per-device autocast functions (set_enabled, set_cpu_enabled,
// set_autocast_gpu_dtype, ...) by ones taking a device type and deprecated the old; 1.13 to 2.3, the 2.1
// that gotch v0.9.1 targets included, have only the old ones.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define CONVREP_AUTOCAST_BY_DEVICE 1
#endif

namespace convrep {

bool autocast_on(bool cuda) {
#ifdef CONVREP_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

at::ScalarType autocast_dtype(bool cuda) {
#ifdef CONVREP_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

} // namespace convrep

using convrep::error_of;

namespace {

using convrep::autocast_dtype;
using convrep::autocast_on;

void set(bool cuda, bool enabled, at::ScalarType dtype) {
#ifdef CONVREP_AUTOCAST_BY_DEVICE
  at::DeviceType dev = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(dev, dtype);
  at::autocast::set_autocast_enabled(dev, enabled);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

} // namespace

// The same steps as Python's torch.autocast.__enter__: remember the previous state, set the dtype, switch
// autocast on (or off, for torch.autocast(enabled=False)), count one more nesting level.
char *convrep_autocast_enter(int cuda, int enabled, int dtype, int *prev_enabled, int *prev_dtype) {
  try {
    *prev_enabled = autocast_on(cuda) ? 1 : 0;
    *prev_dtype = static_cast<int>(autocast_dtype(cuda));
    set(cuda, enabled != 0, static_cast<at::ScalarType>(dtype));
    at::autocast::increment_nesting();
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

// torch.autocast.__exit__: leaving the outermost level drops the cached low-precision copies of the
// weights (they are stale once the optimiser steps), then the previous state comes back.
char *convrep_autocast_exit(int cuda, int prev_enabled, int prev_dtype) {
  try {
    if (at::autocast::decrement_nesting() == 0) {
      at::autocast::clear_cache();
    }
    set(cuda, prev_enabled != 0, static_cast<at::ScalarType>(prev_dtype));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_autocast_enabled(int cuda, int *dtype) {
  try {
    *dtype = static_cast<int>(autocast_dtype(cuda));
    return autocast_on(cuda) ? 1 : 0;
  } catch (const std::exception &) {
    return 0;
  }
}
