#include "dist.h"
#include "handles.h"

// c10d's headers declare each backend only under its USE_C10D_* macro; cmd/setup sets CONVREP_* for the
// backends this libtorch can build.
#ifdef CONVREP_GLOO
#define USE_C10D_GLOO
#endif
#ifdef CONVREP_NCCL
#define USE_C10D_NCCL
#endif

// TORCH_VERSION_* below come from here, not through whatever chain of headers happens to include it.
#include <torch/version.h>
#include <torch/torch.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#ifdef CONVREP_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef CONVREP_NCCL
#include <nccl.h>
#include "nccl_check.h"
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
  int device;  // the GPU an NCCL group is bound to; -1 for none
};

// Makes the group's GPU current for the guard's scope, whichever OS thread calls (Go moves goroutines between
// threads, and CUDA's current device is per thread); nothing for a group bound to no GPU.
struct bound_device {
  c10::OptionalDeviceGuard guard;
  explicit bound_device(const convrep_group *g) {
    if (g->device >= 0) guard.reset_device(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(g->device)));
  }
};

using convrep::error_of, convrep::tensor;

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

char *convrep_group_new(const char *backend, const char *addr, int port, int rank, int world, int device,
                        int64_t timeout_ms, convrep_group **out) {
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
    auto g = new convrep_group{store, {}, world, device};
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
      if (device < 0) {
        delete g;
        return error_of(std::string("NCCL needs a GPU for each rank; this rank was given none"));
      }
      bound_device on(g);
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
    bound_device on(g);
    std::vector<at::Tensor> one{tensor(t)};
    g->pg->allreduce(one, o)->wait();
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

char *convrep_broadcast(convrep_group *g, void **tensors, int n, int root) {
  try {
    bound_device on(g);
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
    bound_device on(g);
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
    bound_device on(g);
    // ProcessGroupNCCL::barrier runs on the devices named here; without them, before any collective, it
    // guesses GPU rank % device count, which is not this rank's on a second node or with fewer ranks.
    c10d::BarrierOptions o;
    if (g->device >= 0) o.device_ids = {g->device};
    g->pg->barrier(o)->wait();
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

// The state the hooks share with the training loop. Hooks run on autograd's threads, so it is guarded.
//
// Each bucket is one flat buffer, and its parameters' gradients are views of it, as DDP's Reducer makes them
// with gradient_as_bucket_view (torch/csrc/distributed/c10d/reducer.cpp: initialize_bucket_views,
// mark_variable_ready_dense): a gradient that is not yet its view (the first step, or one that something
// replaced) is copied in once and the view becomes the parameter's gradient; from then on autograd's
// AccumulateGrad adds each backward pass's gradient into the view in place, the buffer is all-reduced in
// place and divided, and nothing is copied back.
//
// Every rank all-reduces every bucket, in the same order, whatever gradients it has, as the reducer does: a
// collective pairs the ranks' calls by their order, so a rank that skipped a bucket in which it had no
// gradient would pair its next bucket with the others' skipped one (NCCL then sums unrelated buffers, or
// hangs on a size mismatch). A parameter that has no gradient on this rank sends zeros, and the flag slot
// behind its bucket's gradients (1 where a rank has a gradient, 0 where not) counts after the all-reduce how
// many ranks had one: where any had, this rank takes the averaged gradient too, so that every rank's
// optimiser steps the same parameters; where none had, no rank gets a gradient (the reducer's
// find_unused_parameters does the same with a separate all-reduce of a used map).
struct overlap_state {
  convrep_group *g;
  std::vector<at::Tensor> params;
  std::vector<std::vector<size_t>> buckets;  // parameter indices, in launch order
  std::vector<size_t> bucket_of;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // kept alive, or the hooks vanish
  std::vector<at::Tensor> flat;   // per bucket: its gradients, end to end, then one flag per parameter
  std::vector<int64_t> grad_numel;  // per bucket: where its flags start
  std::vector<at::Tensor> flags;  // per bucket: its flags, a view of the buffer's tail
  std::vector<int64_t> slot;      // per parameter: its flag's place in its bucket
  std::vector<size_t> missing;    // parameters with no gradient here in the pass being sent
  std::vector<at::Tensor> views;  // per parameter: its part of its bucket's buffer, shaped as the parameter
  std::mutex mu;
  bool armed = false, alive = true;
  std::vector<int> waiting;  // per bucket: parameters not yet ready
  std::vector<bool> ready;
  size_t next = 0;           // the next bucket to send
  size_t early = 0;          // buckets the hooks sent during the last armed pass
  std::vector<c10::intrusive_ptr<c10d::Work>> works;

  // Whether parameter i's gradient is its bucket view (the same memory, shape and strides).
  bool is_view(size_t i) {
    const at::Tensor &grad = params[i].grad();
    const at::Tensor &v = views[i];
    return grad.defined() && grad.data_ptr() == v.data_ptr() && grad.sizes() == v.sizes() &&
           grad.strides() == v.strides() && grad.scalar_type() == v.scalar_type() && grad.device() == v.device();
  }

  // Sends bucket b, on every rank whatever it holds: every parameter with a gradient has it in its view and
  // flag 1; one without sends zeros and flag 0, and waits for finish to learn whether another rank had one.
  // Holds mu.
  void send(size_t b) {
    bound_device on(g);
    flags[b].fill_(1);
    for (size_t i : buckets[b]) {
      const at::Tensor &grad = params[i].grad();
      if (!grad.defined()) {
        views[i].zero_();
        flags[b].narrow(0, slot[i], 1).zero_();
        missing.push_back(i);
        continue;
      }
      if (!is_view(i)) {
        views[i].copy_(grad);
        params[i].mutable_grad() = views[i];
      }
    }
    std::vector<at::Tensor> one{flat[b]};
    works[b] = g->pg->allreduce(one);
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
    for (auto &members : s->buckets) {
      const at::Tensor &first = s->params[members[0]];
      int64_t numel = 0;
      for (size_t i : members) numel += s->params[i].numel();
      at::Tensor flat = at::zeros({numel + static_cast<int64_t>(members.size())}, first.options().requires_grad(false));
      int64_t off = 0;
      for (size_t k = 0; k < members.size(); k++) {
        const at::Tensor &p = s->params[members[k]];
        s->views.push_back(flat.narrow(0, off, p.numel()).view(p.sizes()));
        s->slot.push_back(static_cast<int64_t>(k));
        off += p.numel();
      }
      s->flat.push_back(flat);
      s->grad_numel.push_back(numel);
      s->flags.push_back(flat.narrow(0, numel, static_cast<int64_t>(members.size())));
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
  s.works.assign(s.buckets.size(), {});
  s.missing.clear();
}

char *convrep_overlap_finish(convrep_overlap *o) {
  auto &s = *o->s;
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.armed) return error_of(std::string("finish without arm"));
    s.armed = false;
    s.early = s.next;
    bound_device on(s.g);
    // Buckets with parameters outside this step's graph never filled: send them now, in order.
    while (s.next < s.buckets.size()) s.send(s.next++);
    // The gradients are views of the buffers: the mean lands in them in place (the flags stay counts).
    for (size_t b = 0; b < s.buckets.size(); b++) {
      s.works[b]->wait();
      s.flat[b].narrow(0, 0, s.grad_numel[b]).div_(s.g->world);
    }
    // A parameter that had no gradient here takes the mean where another rank had one. Reading its flag
    // waits for the device: only steps in which this rank's graph missed a trained parameter pay it.
    for (size_t i : s.missing) {
      if (s.flags[s.bucket_of[i]].narrow(0, s.slot[i], 1).item<double>() > 0) s.params[i].mutable_grad() = s.views[i];
    }
    s.missing.clear();
    s.works.assign(s.buckets.size(), {});
  } catch (const std::exception &e) {
    return error_of(e);
  }
  return nullptr;
}

int convrep_overlap_views(convrep_overlap *o) {
  std::lock_guard<std::mutex> lock(o->s->mu);
  int n = 0;
  for (size_t i = 0; i < o->s->params.size(); i++) n += o->s->is_view(i) ? 1 : 0;
  return n;
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
