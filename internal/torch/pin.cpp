#include "pin.h"

#include <ATen/ATen.h>
#include <cstring>
#include <exception>

// Tensor::pin_memory() without a device. From libtorch 2.4 on, passing one is deprecated and warns on every
// call, twice (at::native::pin_memory and is_pinned, aten/src/ATen/native/Memory.cpp); without one, 1.13
// pins for CUDA and 2.x for the current accelerator, which is the GPU the copy goes to.
char *convrep_pin_memory(void *tensor, void **out) {
  try {
    *out = new at::Tensor(static_cast<at::Tensor *>(tensor)->pin_memory());
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}
