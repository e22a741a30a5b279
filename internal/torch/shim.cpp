#include "shim.h"
#include "handles.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Generator.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <exception>

using convrep::error_of;

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

// torch.use_deterministic_algorithms(on) calls the same two setters (torch/csrc/Module.cpp in 2.1); its cuDNN
// switches are torch.backends.cudnn.deterministic and .benchmark. On CUDA, cuBLAS also needs
// CUBLAS_WORKSPACE_CONFIG (Context::alertCuBLASConfigNotDeterministic), which the caller sets.
char *convrep_set_deterministic(int on) {
  try {
    auto &ctx = at::globalContext();
    ctx.setDeterministicAlgorithms(on != 0, /*warn_only=*/false);
    ctx.setDeterministicCuDNN(on != 0);
    ctx.setBenchmarkCuDNN(false);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_deterministic(void) { return at::globalContext().deterministicAlgorithms() ? 1 : 0; }

// The default generator of GPU `device`, or the CPU's for device < 0. Context::defaultGenerator (ATen/Context.h)
// reaches the CUDA one through ATen's CUDA hooks, which call at::cuda::detail::getDefaultCUDAGenerator(index)
// (ATen/cuda/CUDAGeneratorImpl.cpp) in a CUDA build and throw in a CPU one: the same code compiles in both.
static at::Generator generator(int device) {
  if (device < 0) return at::detail::getDefaultCPUGenerator();
  return at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)));
}

// As torch.get_rng_state / torch.cuda.get_rng_state: the state under the generator's lock, as a CPU byte tensor
// (the CPU's Mersenne Twister state, or a GPU's Philox seed and offset, 16 bytes).
char *convrep_get_rng_state(int device, uint8_t **out, int64_t *len) {
  try {
    auto gen = generator(device);
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

// Each generator's set_state checks the size and refuses a state of another kind.
char *convrep_set_rng_state(int device, const uint8_t *data, int64_t len) {
  try {
    auto state = at::empty({len}, at::kByte);
    memcpy(state.data_ptr<uint8_t>(), data, len);
    auto gen = generator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

// One generator alone, unlike at::manual_seed, which seeds them all.
char *convrep_seed_rng(int device, uint64_t seed) {
  try {
    auto gen = generator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

// Makes GPU `device` this thread's current one, as c10::cuda::set_device does: through c10's registered CUDA
// device guard (c10/cuda/impl/CUDAGuardImpl.h, setDevice), which a CPU build lacks, so there it throws.
char *convrep_set_cuda_device(int device) {
  try {
    c10::impl::getDeviceGuardImpl(c10::kCUDA)->setDevice(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}
