//go:build !convrep_nokernels

#include "profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstring>
#include <exception>
#include <set>
#include <string>

// The calls torch.profiler.profile makes (torch/autograd/profiler.py: _prepare_profiler, _enable_profiler,
// _disable_profiler, then the result's save for export_chrome_trace), from torch/csrc/autograd/profiler_kineto.h,
// whose signatures are the same in libtorch 1.13 and 2.x.
namespace {

std::set<torch::profiler::impl::ActivityType> activities(int cuda) {
  std::set<torch::profiler::impl::ActivityType> a{torch::profiler::impl::ActivityType::CPU};
  if (cuda) a.insert(torch::profiler::impl::ActivityType::CUDA);
  return a;
}

} // namespace

char *convrep_profile_start(int cuda) {
  try {
    torch::profiler::impl::ProfilerConfig cfg(torch::profiler::impl::ProfilerState::KINETO);
    torch::autograd::profiler::prepareProfiler(cfg, activities(cuda));
    torch::autograd::profiler::enableProfiler(cfg, activities(cuda));
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}

char *convrep_profile_stop(const char *path) {
  try {
    auto result = torch::autograd::profiler::disableProfiler();
    if (result == nullptr) throw std::runtime_error("the profiler was not running");
    result->save(std::string(path));
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}
