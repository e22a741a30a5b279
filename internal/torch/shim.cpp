#include "shim.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
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
