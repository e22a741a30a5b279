#include "shim.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Generator.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <exception>

static char *error_of(const std::exception &e) { return strdup(e.what()); }

// at::manual_seed seeds the CPU generator and, in a CUDA build, every GPU's.
char *convrep_manual_seed(uint64_t seed) {
  try {
    at::manual_seed(seed);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_set_num_threads(int n) {
  try {
    at::set_num_threads(n);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_get_num_threads(void) { return at::get_num_threads(); }

char *convrep_get_cpu_rng_state(uint8_t **out, int64_t *len) {
  try {
    auto gen = at::detail::getDefaultCPUGenerator();
    at::Tensor state;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      state = gen.get_state();
    }
    *len = state.numel();
    *out = static_cast<uint8_t *>(malloc(*len));
    memcpy(*out, state.data_ptr<uint8_t>(), *len);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_set_cpu_rng_state(const uint8_t *data, int64_t len) {
  try {
    auto state = at::empty({len}, at::kByte);
    memcpy(state.data_ptr<uint8_t>(), data, len);
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}
