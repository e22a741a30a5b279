#include "dist.h"

// c10d's headers declare each backend only under its USE_C10D_* macro; cmd/setup sets CONVREP_* for the
// backends this libtorch can build.
#ifdef CONVREP_GLOO
#define USE_C10D_GLOO
#endif
#ifdef CONVREP_NCCL
#define USE_C10D_NCCL
#endif

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#ifdef CONVREP_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef CONVREP_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

// From libtorch 2.0 the backends derive from c10d::Backend; before, from c10d::ProcessGroup. Both declare
// the collectives used here with the same signatures.
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

struct convrep_group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<GroupBase> pg;
  int world;
};

static char *error_of(const std::exception &e) { return strdup(e.what()); }
static char *error_of(const std::string &s) { return strdup(s.c_str()); }
static at::Tensor &tensor(void *h) { return *static_cast<at::Tensor *>(h); }

int convrep_has_backend(const char *backend) {
  std::string b(backend);
#ifdef CONVREP_GLOO
  if (b == "gloo") return 1;
#endif
#ifdef CONVREP_NCCL
  if (b == "nccl") return 1;
#endif
  return 0;
}

char *convrep_group_new(const char *backend, const char *addr, int port, int rank, int world, int64_t timeout_ms,
                        convrep_group **out) {
  try {
    std::chrono::milliseconds timeout(timeout_ms);
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(port);
    opts.isServer = rank == 0;
    opts.numWorkers = static_cast<std::size_t>(world);
    opts.waitWorkers = true;
    opts.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(std::string(addr), opts);
    // The prefix keeps this group's keys apart from anything else sharing the store, as torch.distributed does.
    auto store = c10::make_intrusive<c10d::PrefixStore>("convrep", tcp);
    auto g = new convrep_group{store, {}, world};
    std::string b(backend);
    if (b == "gloo") {
#ifdef CONVREP_GLOO
      auto o = c10d::ProcessGroupGloo::Options::create(timeout);
      const char *ifname = std::getenv("GLOO_SOCKET_IFNAME");
      if (ifname != nullptr && *ifname != '\0') {
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      } else {
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      o->threads = 2;
      g->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, o);
#else
      delete g;
      return error_of(std::string("this build has no Gloo backend (its headers were missing at set-up)"));
#endif
    } else if (b == "nccl") {
#ifdef CONVREP_NCCL
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout;
      g->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, o);
#else
      delete g;
      return error_of(std::string("this build has no NCCL backend (a CUDA libtorch is needed)"));
#endif
    } else {
      delete g;
      return error_of("unknown backend " + b + " (want gloo or nccl)");
    }
    *out = g;
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

void convrep_group_free(convrep_group *g) { delete g; }

static void wait_all(std::vector<c10::intrusive_ptr<c10d::Work>> &works) {
  for (auto &w : works) w->wait();
}

char *convrep_allreduce_mean(convrep_group *g, void **tensors, int n, int64_t bucket_bytes) {
  try {
    // Buckets: consecutive tensors of one dtype and device, up to bucket_bytes each (a larger tensor alone).
    std::vector<std::vector<at::Tensor>> buckets;
    int64_t bytes = 0;
    for (int i = 0; i < n; i++) {
      if (!at::isFloatingType(tensor(tensors[i]).scalar_type())) {
        return error_of("tensor " + std::to_string(i) + " is not floating point; a mean needs one");
      }
    }
    for (int i = 0; i < n; i++) {
      at::Tensor &t = tensor(tensors[i]);
      int64_t b = t.numel() * t.element_size();
      bool fresh = buckets.empty() || bytes + b > bucket_bytes ||
                   buckets.back()[0].scalar_type() != t.scalar_type() || buckets.back()[0].device() != t.device();
      if (fresh) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(t);
      bytes += b;
    }
    std::vector<at::Tensor> flat;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto &bucket : buckets) {
      std::vector<at::Tensor> views;
      for (auto &t : bucket) views.push_back(t.reshape({-1}));
      flat.push_back(at::cat(views));
      std::vector<at::Tensor> one{flat.back()};
      works.push_back(g->pg->allreduce(one));
    }
    wait_all(works);
    for (size_t k = 0; k < buckets.size(); k++) {
      flat[k].div_(g->world);
      int64_t off = 0;
      for (auto &t : buckets[k]) {
        int64_t m = t.numel();
        t.copy_(flat[k].narrow(0, off, m).view(t.sizes()));
        off += m;
      }
    }
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_allreduce(convrep_group *g, void *t, int op) {
  try {
    c10d::AllreduceOptions o;
    switch (op) {
      case 0: o.reduceOp = c10d::ReduceOp::SUM; break;
      case 1: o.reduceOp = c10d::ReduceOp::MAX; break;
      case 2: o.reduceOp = c10d::ReduceOp::MIN; break;
      default: return error_of("unknown reduce op " + std::to_string(op));
    }
    std::vector<at::Tensor> one{tensor(t)};
    g->pg->allreduce(one, o)->wait();
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_broadcast(convrep_group *g, void **tensors, int n, int root) {
  try {
    c10d::BroadcastOptions o;
    o.rootRank = root;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (int i = 0; i < n; i++) {
      std::vector<at::Tensor> one{tensor(tensors[i])};
      works.push_back(g->pg->broadcast(one, o));
    }
    wait_all(works);
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_allgather(convrep_group *g, void *t, void **out) {
  try {
    at::Tensor in = tensor(t).contiguous();
    std::vector<at::Tensor> parts;
    for (int r = 0; r < g->world; r++) parts.push_back(at::empty_like(in));
    std::vector<std::vector<at::Tensor>> outs{parts};
    std::vector<at::Tensor> ins{in};
    g->pg->allgather(outs, ins)->wait();
    *out = new at::Tensor(at::cat(outs[0], 0));
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_barrier(convrep_group *g) {
  try {
    g->pg->barrier()->wait();
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}
