#include "graph.h"

#include <ATen/ATen.h>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <torch/version.h>

#ifdef CONVREP_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace {

template <typename F> char *guarded(F f) {
  try {
    f();
  } catch (const std::exception &e) {
    return strdup(e.what());
  }
  return nullptr;
}

#ifdef CONVREP_CUDA
// What torch.cuda.graph does around a capture (torch/cuda/graphs.py), kept by convrep's trainer for the
// whole run: one side stream, since libtorch refuses to capture on the default stream
// (aten/src/ATen/cuda/CUDAGraph.cpp, capture_begin), and the eager warm-up steps run on the same stream,
// so that what libtorch sets up lazily per stream (cuBLAS's workspace) exists before the capture.
struct Graph {
  c10::DeviceIndex device;
  c10::cuda::CUDAStream stream;
  std::optional<c10::cuda::CUDAStream> previous;
  at::cuda::CUDAGraph graph;
  Graph(c10::DeviceIndex d) : device(d), stream(c10::cuda::getStreamFromPool(false, d)) {}
};

// b waits for the work queued on a so far, on the device.
void wait(const c10::cuda::CUDAStream &b, const c10::cuda::CUDAStream &a) {
  at::cuda::CUDAEvent ev;
  ev.record(a);
  ev.block(b);
}

Graph &graph(void *g) { return *static_cast<Graph *>(g); }
#endif

} // namespace

int convrep_graph_compiled(void) {
#ifdef CONVREP_CUDA
  return 1;
#else
  return 0;
#endif
}

char *convrep_cuda_mem_info(int device, long long *free_bytes, long long *total_bytes) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMemGetInfo: ") + cudaGetErrorString(e));
    *free_bytes = static_cast<long long>(f);
    *total_bytes = static_cast<long long>(t);
#else
    (void)device;
    *free_bytes = *total_bytes = 0;
    throw std::runtime_error("this libtorch has no CUDA");
#endif
  });
}

char *convrep_graph_new(int device, void **out) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    // The device current while CUDAGraph is made is device's, whatever thread calls (no context on GPU 0).
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    *out = new Graph(static_cast<c10::DeviceIndex>(device));
#else
    (void)device;
    *out = nullptr;
    throw std::runtime_error("this libtorch has no CUDA: CUDA graphs need a CUDA build (go run ./cmd/setup)");
#endif
  });
}

char *convrep_graph_enter(void *g) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    Graph &s = graph(g);
    if (s.previous) throw std::runtime_error("CUDA graph: entered twice");
    c10::cuda::CUDAStream cur = c10::cuda::getCurrentCUDAStream(s.device);
    wait(s.stream, cur);
    s.previous = cur;
    c10::cuda::setCurrentCUDAStream(s.stream);
#else
    (void)g;
#endif
  });
}

char *convrep_graph_leave(void *g) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    Graph &s = graph(g);
    if (!s.previous) throw std::runtime_error("CUDA graph: left without entering");
    c10::cuda::setCurrentCUDAStream(*s.previous);
    wait(*s.previous, s.stream);
    s.previous.reset();
#else
    (void)g;
#endif
  });
}

char *convrep_graph_capture_begin(void *g) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    Graph &s = graph(g);
    if (!s.previous) throw std::runtime_error("CUDA graph: capture outside enter/leave");
    c10::cuda::device_synchronize(); // as torch.cuda.graph's __enter__: nothing of the warm-up still running
#if TORCH_VERSION_MAJOR >= 2
    // Thread-local: the prefetch thread goes on copying the next batch to the GPU while this one captures
    // (a global capture would make those calls fail; torch.cuda.graph's capture_error_mode="thread_local").
    s.graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
    s.graph.capture_begin();
#endif
#else
    (void)g;
#endif
  });
}

char *convrep_graph_capture_end(void *g) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    graph(g).graph.capture_end();
#else
    (void)g;
#endif
  });
}

char *convrep_graph_replay(void *g) {
  return guarded([&] {
#ifdef CONVREP_CUDA
    graph(g).graph.replay();
#else
    (void)g;
#endif
  });
}

void convrep_graph_free(void *g) {
#ifdef CONVREP_CUDA
  delete static_cast<Graph *>(g);
#else
  (void)g;
#endif
}

char *convrep_copy_async(void *dst, void *src) {
  return guarded([&] { static_cast<at::Tensor *>(dst)->copy_(*static_cast<at::Tensor *>(src), true); });
}
