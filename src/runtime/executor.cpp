#include "runtime/executor.h"

#include "core/zeroed_buffer.h"
#include "ir/static_shape.h"
#include "runtime/node_kernels.h"

#include <algorithm>
#include <cstring>
#include <exception>

namespace segmux {

namespace {

size_t value_bytes(const ir::Value& v) { return size_t(shape_numel(v.shape)) * dtype_size(v.dtype); }

// Most of a model's start-up is here: the oneDNN kernels reorder (prepack) their weights. The nodes are
// independent and each writes only its own slot, so they are made on all the run's threads. A oneDNN call
// inside the parallel loop runs on its calling thread alone (nested OpenMP is off), which does not change
// the packed bytes: the result is the same for any number of threads (tests/runtime/test_parallel_build).
void make_kernels(const ir::Graph& graph, const MemoryPlan& plan, const std::vector<const Provider*>& providers,
                  int num_threads, std::vector<std::unique_ptr<Kernel>>& kernels, std::vector<std::string>& chosen) {
  const int64_t count = int64_t(graph.nodes.size());
  kernels.resize(graph.nodes.size());
  chosen.resize(graph.nodes.size());
  std::vector<std::exception_ptr> errors(graph.nodes.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(1, num_threads))
  for (int64_t i = 0; i < count; ++i) {
    const size_t n = size_t(i);
    if (plan.view_nodes[n]) {
      chosen[n] = "view";
      continue;
    }
    try {
      kernels[n] = create_node_kernel(graph, graph.nodes[n], providers, num_threads, &chosen[n]);
    } catch (...) {
      errors[n] = std::current_exception();  // exceptions must not leave the parallel region
    }
  }
  // The first failing node in graph order, as a sequential build reports it.
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Zero-filled and 64-byte padded as Storage::allocate; a large arena is faulted in by one call.
std::shared_ptr<Storage> allocate_arena(size_t bytes) {
  auto buffer = allocate_zeroed_buffer(std::max<size_t>(64, (bytes + 63) / 64 * 64));
  return Storage::borrow(buffer.get(), bytes, buffer);
}

}  // namespace

bool is_view_op(const ir::Node& node) {
  if (!node.domain.empty()) return false;
  const std::string& op = node.op_type;
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity";
}

void validate_plan(const ir::Graph& g, const MemoryPlan& plan) {
  SEGMUX_CHECK(plan.offsets.size() == g.values.size(), "memory plan covers ", plan.offsets.size(),
               " values, the graph has ", g.values.size());
  SEGMUX_CHECK(plan.view_nodes.size() == g.nodes.size(), "memory plan covers ", plan.view_nodes.size(),
               " nodes, the graph has ", g.nodes.size());
  std::vector<char> is_input(g.values.size(), 0);
  for (int v : g.inputs) is_input[size_t(v)] = 1;
  for (size_t v = 0; v < g.values.size(); ++v) {
    int64_t off = plan.offsets[v];
    if (off == MemoryPlan::kNotPlanned) continue;
    const ir::Value& val = g.values[v];
    SEGMUX_CHECK(off >= 0, "memory plan: value '", val.name, "' has negative offset ", off);
    SEGMUX_CHECK(!is_input[v] && !g.is_initializer(int(v)), "memory plan: value '", val.name,
                 "' is a graph input or a weight and cannot live in the arena");
    SEGMUX_CHECK(ir::has_static_shape(val), "memory plan: value '", val.name, "' has no static shape");
    size_t nb = value_bytes(val);
    SEGMUX_CHECK(size_t(off) <= plan.arena_bytes && nb <= plan.arena_bytes - size_t(off), "memory plan: value '",
                 val.name, "' (", nb, " bytes at offset ", off, ") overruns the ", plan.arena_bytes, "-byte arena");
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!plan.view_nodes[n]) continue;
    const ir::Node& node = g.nodes[n];
    SEGMUX_CHECK(is_view_op(node) && !node.inputs.empty() && node.outputs.size() == 1 && node.inputs[0] >= 0 &&
                     node.outputs[0] >= 0,
                 "memory plan: ", node.describe(), " is marked as a view but is not a view op");
    int in = node.inputs[0], out = node.outputs[0];
    SEGMUX_CHECK(plan.offsets[size_t(in)] >= 0 && plan.offsets[size_t(in)] == plan.offsets[size_t(out)] &&
                     value_bytes(g.value(in)) == value_bytes(g.value(out)),
                 "memory plan: view ", node.describe(), " does not share its input's bytes");
  }
}

Executor::Executor(ir::Graph graph, MemoryPlan plan, ExecutorOptions options)
    : graph_(std::move(graph)), plan_(std::move(plan)), options_(options) {
  validate_plan(graph_, plan_);
  make_kernels(graph_, plan_, kernel_providers(options_.use_optimized_kernels), options_.num_threads, kernels_,
               node_providers_);
  // One arena for the model's lifetime (or a shared one); allocate_arena zero-fills it, which is the one
  // first touch.
  // A shared arena is only reserved here; the views are made on it at the first run, so that storage
  // outgrown by a later executor is freed at once.
  if (options_.shared_arena) {
    options_.shared_arena->reserve(plan_.arena_bytes);
  } else {
    arena_ = allocate_arena(plan_.arena_bytes);
    make_views();
  }
}

void Executor::make_views() {
  planned_views_.assign(graph_.values.size(), Tensor());
  for (size_t v = 0; v < graph_.values.size(); ++v) {
    if (plan_.offsets[v] == MemoryPlan::kNotPlanned) continue;
    const ir::Value& val = graph_.values[v];
    planned_views_[v] = Tensor(val.dtype, val.shape, arena_, size_t(plan_.offsets[v]));
  }
}

void SharedArena::reserve(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (storage_ && storage_->nbytes >= bytes) return;
  storage_.reset();                  // executors hold it only during a run, which this mutex excludes
  storage_ = allocate_arena(bytes);  // executors made on the old one re-point at their next run
}

Executor::~Executor() = default;

size_t Executor::prepacked_bytes() const {
  size_t total = 0;
  for (auto& k : kernels_)
    if (k) total += k->prepacked_bytes();
  return total;
}

std::map<std::string, Tensor> Executor::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<std::string> all;
  for (int v : graph_.outputs) all.push_back(graph_.value(v).name);
  return run(inputs, all);
}

std::map<std::string, Tensor> Executor::run(const std::map<std::string, Tensor>& inputs,
                                            const std::vector<std::string>& wanted) {
  std::vector<int> copy_out;
  for (const std::string& name : wanted) {
    int found = -1;
    for (int v : graph_.outputs)
      if (graph_.value(v).name == name) found = v;
    SEGMUX_CHECK(found >= 0, "'", name, "' is not an output of the model");
    copy_out.push_back(found);
  }
  std::lock_guard<std::mutex> lock(run_mutex_);
  // A shared arena is held only during the run (views made on it now, dropped at the end, even on an
  // error), so that growing it for another executor never leaves an outgrown copy alive.
  std::unique_lock<std::mutex> shared_lock;
  struct DropViews {
    Executor* e;
    ~DropViews() {
      if (!e) return;
      e->planned_views_.clear();
      e->arena_.reset();
    }
  } drop{nullptr};
  if (options_.shared_arena) {
    shared_lock = std::unique_lock<std::mutex>(options_.shared_arena->mutex_);
    arena_ = options_.shared_arena->storage_;
    SEGMUX_CHECK(arena_ && arena_->nbytes >= plan_.arena_bytes, "shared arena smaller than the plan");
    make_views();
    drop.e = this;
  }
  std::vector<Tensor> values = planned_views_;
  for (auto& [id, t] : graph_.initializers) values[size_t(id)] = t;
  for (int v : graph_.inputs) {
    const ir::Value& val = graph_.value(v);
    auto it = inputs.find(val.name);
    SEGMUX_CHECK(it != inputs.end(), "missing input '", val.name, "' (", dtype_name(val.dtype), " ",
                 shape_str(val.shape), ")");
    SEGMUX_CHECK(it->second.defined(), "input '", val.name, "' is an empty tensor");
    SEGMUX_CHECK(it->second.dtype() == val.dtype, "input '", val.name, "' is ", dtype_name(it->second.dtype()),
                 ", the model expects ", dtype_name(val.dtype));
    SEGMUX_CHECK(!val.has_shape || it->second.shape() == val.shape, "input '", val.name, "' has shape ",
                 shape_str(it->second.shape()), ", the model expects ", shape_str(val.shape));
    values[size_t(v)] = it->second;
  }
  for (auto& [name, t] : inputs) {
    int v = graph_.find_value(name);
    bool is_input = false;
    for (int in : graph_.inputs) is_input |= in == v;
    SEGMUX_CHECK(is_input, "'", name, "' is not an input of the model");
  }

  std::vector<const Tensor*> vin;
  std::vector<Tensor> outs;
  std::vector<Tensor*> out_ptrs;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    if (plan_.view_nodes[n]) continue;  // the output view already shows the input's bytes
    const ir::Node& node = graph_.nodes[n];
    vin.assign(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (node.inputs[k] >= 0) vin[k] = &values[size_t(node.inputs[k])];
    outs.assign(node.outputs.size(), Tensor());
    bool all_planned = true;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int o = node.outputs[k];
      if (o >= 0 && plan_.offsets[size_t(o)] != MemoryPlan::kNotPlanned)
        outs[k] = planned_views_[size_t(o)];
      else if (o >= 0)
        all_planned = false;
    }
    if (!all_planned) {
      // Data-dependent shapes: infer from the actual inputs and allocate for this run only.
      std::vector<ir::TensorType> types(node.inputs.size());
      std::vector<const ir::TensorType*> tin(node.inputs.size(), nullptr);
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        if (!vin[k]) continue;
        types[k] = ir::TensorType{vin[k]->dtype(), vin[k]->shape(), true};
        tin[k] = &types[k];
      }
      auto out_types = ir::infer_node(node, tin, vin);
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        if (outs[k].defined() || node.outputs[k] < 0) continue;
        bool known = out_types[k].has_shape;
        for (int64_t d : out_types[k].shape) known = known && d >= 0;
        if (known) outs[k] = Tensor(out_types[k].dtype, out_types[k].shape);
      }
    }
    out_ptrs.clear();
    for (auto& t : outs) out_ptrs.push_back(&t);
    KernelContext ctx{node, vin, out_ptrs, options_.num_threads};
    if (observer_) {
      const auto start = std::chrono::steady_clock::now();
      kernels_[n]->run(ctx);
      observer_(NodeRun{n, node, vin, out_ptrs, start, std::chrono::steady_clock::now()});
    } else {
      kernels_[n]->run(ctx);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int o = node.outputs[k];
      if (o < 0) continue;
      SEGMUX_CHECK(outs[k].defined(), node.describe(), ": kernel left output ", k, " unset");
      const Tensor& planned = planned_views_[size_t(o)];
      if (planned.defined() && outs[k].raw() != planned.raw()) {
        // A kernel replaced its preallocated output: bring the result back into the arena.
        SEGMUX_CHECK(outs[k].dtype() == planned.dtype() && outs[k].shape() == planned.shape(), node.describe(),
                     ": kernel produced ", dtype_name(outs[k].dtype()), " ", shape_str(outs[k].shape()), " for output ",
                     k, ", the plan expects ", dtype_name(planned.dtype()), " ", shape_str(planned.shape()));
        if (planned.nbytes()) std::memcpy(values[size_t(o)].raw(), outs[k].raw(), planned.nbytes());
      } else {
        values[size_t(o)] = std::move(outs[k]);
      }
    }
  }
  std::map<std::string, Tensor> result;
  for (int v : copy_out) result[graph_.value(v).name] = values[size_t(v)].clone();
  return result;
}

}  // namespace segmux
