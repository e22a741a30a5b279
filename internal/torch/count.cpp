#include "count.h"

#include <ATen/record_function.h>
#include <torch/version.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>

// The dispatcher runs RecordFunction's callbacks for every observed operator it calls when a callback is
// registered for RecordScope::FUNCTION (c10::Dispatcher::call in ATen/core/dispatch/Dispatcher.h, 1.13 and
// 2.x alike), and the autograd engine for every node it applies with RecordScope::BACKWARD_FUNCTION
// (torch::autograd::Node::operator() in torch/csrc/autograd/function.h). A global callback
// (ATen/record_function.h: addGlobalCallback, removeCallback) sees every thread, so the ops of the backward
// pass are counted on a GPU too, where the engine runs them on its device thread. With no callback the
// dispatcher pays one branch per call; with this one, each operator takes RecordFunction's slower path, so
// counting is for measuring runs, not timed ones.

namespace {

std::atomic<int64_t> ops{0};
std::atomic<int64_t> nodes{0};
std::mutex mu;
at::CallbackHandle callback = 0; // 0: none registered (at::INVALID_CALLBACK_HANDLE in 2.x)

std::unique_ptr<at::ObserverContext> on_record(const at::RecordFunction &fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    nodes.fetch_add(1, std::memory_order_relaxed);
  } else {
    ops.fetch_add(1, std::memory_order_relaxed);
  }
  return nullptr;
}

} // namespace

char *convrep_count_ops(int on) {
  try {
    std::lock_guard<std::mutex> lock(mu);
    if (on && callback == 0) {
      callback = at::addGlobalCallback(
          at::RecordFunctionCallback(on_record).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    } else if (!on && callback != 0) {
      at::removeCallback(callback);
      callback = 0;
    }
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}

int64_t convrep_ops(void) { return ops.load(std::memory_order_relaxed); }

int64_t convrep_backward_nodes(void) { return nodes.load(std::memory_order_relaxed); }

const char *convrep_torch_version(void) { return TORCH_VERSION; }
