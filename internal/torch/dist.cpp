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

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <chrono>
#include <memory>
#include <mutex>
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

// The state the hooks share with the training loop. Hooks run on autograd's threads, so it is guarded.
struct overlap_state {
  convrep_group *g;
  std::vector<at::Tensor> params;
  std::vector<std::vector<size_t>> buckets;  // parameter indices, in launch order
  std::vector<size_t> bucket_of;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // kept alive, or the hooks vanish
  std::mutex mu;
  bool armed = false, alive = true;
  std::vector<int> waiting;  // per bucket: parameters not yet ready
  std::vector<bool> ready;
  size_t next = 0;           // the next bucket to send
  size_t early = 0;          // buckets the hooks sent during the last armed pass
  std::vector<at::Tensor> flat;
  std::vector<std::vector<size_t>> sent;  // per bucket: the parameters whose gradients it carries
  std::vector<c10::intrusive_ptr<c10d::Work>> works;

  // Sends bucket b with the gradients its ready parameters have. Holds mu.
  void send(size_t b) {
    std::vector<at::Tensor> views;
    std::vector<size_t> members;
    for (size_t i : buckets[b]) {
      const at::Tensor &grad = params[i].grad();
      if (ready[i] && grad.defined()) {
        views.push_back(grad.reshape({-1}));
        members.push_back(i);
      }
    }
    flat[b] = views.empty() ? at::Tensor() : at::cat(views);
    sent[b] = members;
    if (flat[b].defined()) {
      std::vector<at::Tensor> one{flat[b]};
      works[b] = g->pg->allreduce(one);
    }
  }

  // Sends every bucket, in order, whose parameters are all ready. Holds mu.
  void advance() {
    while (next < buckets.size() && waiting[next] == 0) send(next++);
  }
};

struct convrep_overlap {
  std::shared_ptr<overlap_state> s;
};

namespace {
struct ReadyHook : torch::autograd::FunctionPostHook {
  std::weak_ptr<overlap_state> state;
  size_t index;
  ReadyHook(std::weak_ptr<overlap_state> st, size_t i) : state(std::move(st)), index(i) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list &outputs,
                                            const torch::autograd::variable_list & /*inputs*/) override {
    auto s = state.lock();
    if (!s) return outputs;
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->alive || !s->armed || s->ready[index]) return outputs;
    s->ready[index] = true;
    s->waiting[s->bucket_of[index]]--;
    s->advance();
    return outputs;
  }
};
}  // namespace

char *convrep_overlap_new(convrep_group *g, void **params, int n, int64_t bucket_bytes, convrep_overlap **out) {
  try {
    auto s = std::make_shared<overlap_state>();
    s->g = g;
    int64_t bytes = 0;
    for (int i = 0; i < n; i++) {
      at::Tensor &p = tensor(params[i]);
      if (!p.requires_grad() || !p.is_leaf()) {
        return error_of("parameter " + std::to_string(i) + " is not a leaf that requires a gradient");
      }
      if (!at::isFloatingType(p.scalar_type())) {
        return error_of("parameter " + std::to_string(i) + " is not floating point");
      }
      int64_t b = p.numel() * p.element_size();
      bool fresh = s->buckets.empty() || bytes + b > bucket_bytes ||
                   s->params[s->buckets.back()[0]].scalar_type() != p.scalar_type() ||
                   s->params[s->buckets.back()[0]].device() != p.device();
      if (fresh) {
        s->buckets.emplace_back();
        bytes = 0;
      }
      s->params.push_back(p);
      s->buckets.back().push_back(i);
      s->bucket_of.push_back(s->buckets.size() - 1);
      bytes += b;
    }
    for (int i = 0; i < n; i++) {
      auto acc = torch::autograd::impl::grad_accumulator(s->params[i]);
      acc->add_post_hook(std::make_unique<ReadyHook>(s, i));
      s->accumulators.push_back(acc);
    }
    *out = new convrep_overlap{s};
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

void convrep_overlap_arm(convrep_overlap *o) {
  auto &s = *o->s;
  std::lock_guard<std::mutex> lock(s.mu);
  s.armed = true;
  s.next = 0;
  s.ready.assign(s.params.size(), false);
  s.waiting.clear();
  for (auto &b : s.buckets) s.waiting.push_back(static_cast<int>(b.size()));
  s.flat.assign(s.buckets.size(), at::Tensor());
  s.sent.assign(s.buckets.size(), {});
  s.works.assign(s.buckets.size(), {});
}

char *convrep_overlap_finish(convrep_overlap *o) {
  auto &s = *o->s;
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.armed) return error_of(std::string("finish without arm"));
    s.armed = false;
    s.early = s.next;
    // Buckets with parameters outside this step's graph never filled: send them now, in order.
    while (s.next < s.buckets.size()) s.send(s.next++);
    for (size_t b = 0; b < s.buckets.size(); b++) {
      if (!s.works[b]) continue;
      s.works[b]->wait();
      s.flat[b].div_(s.g->world);
      int64_t off = 0;
      for (size_t i : s.sent[b]) {
        at::Tensor grad = s.params[i].mutable_grad();
        int64_t m = grad.numel();
        grad.copy_(s.flat[b].narrow(0, off, m).view(grad.sizes()));
        off += m;
      }
    }
    s.flat.assign(s.buckets.size(), at::Tensor());
    s.works.assign(s.buckets.size(), {});
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_overlap_early(convrep_overlap *o) {
  std::lock_guard<std::mutex> lock(o->s->mu);
  return static_cast<int>(o->s->early);
}

void convrep_overlap_free(convrep_overlap *o) {
  {
    std::lock_guard<std::mutex> lock(o->s->mu);
    o->s->alive = false;
    o->s->armed = false;
  }
  delete o;
}
