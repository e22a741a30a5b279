#include "opcount.h"

#include <ATen/record_function.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

// Counted through RecordFunction, the hook libtorch's profiler uses: a thread-local callback sees the ops of
// this thread, and the autograd engine carries the thread-local state to the threads that run backward.
namespace {
std::mutex mu;
bool counting = false;
at::CallbackHandle handle;
std::atomic<int64_t> top_calls{0}, op_calls{0}, node_calls{0};
thread_local int depth = 0;  // events open on this thread: an op at depth 0 was called by the program

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    node_calls.fetch_add(1, std::memory_order_relaxed);
  } else {
    if (depth == 0) top_calls.fetch_add(1, std::memory_order_relaxed);
    op_calls.fetch_add(1, std::memory_order_relaxed);
  }
  depth++;
  return nullptr;
}

void on_end(const at::RecordFunction &, at::ObserverContext *) { depth--; }
}  // namespace

char *convrep_opcount_start(void) {
  std::lock_guard<std::mutex> lock(mu);
  if (counting) return strdup("op counting is already on");
  top_calls = 0;
  op_calls = 0;
  node_calls = 0;
  handle = at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end)
                                          .needsInputs(false)
                                          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  counting = true;
  return nullptr;
}

void convrep_opcount_stop(int64_t *top, int64_t *ops, int64_t *nodes) {
  std::lock_guard<std::mutex> lock(mu);
  if (counting) {
    at::removeCallback(handle);
    counting = false;
  }
  *top = top_calls.load();
  *ops = op_calls.load();
  *nodes = node_calls.load();
}
