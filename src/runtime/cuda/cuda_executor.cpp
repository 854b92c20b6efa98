#include "runtime/cuda/cuda_executor.h"

#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/launch_shape.h"
#include "runtime/node_kernels.h"

namespace segmux {

namespace {

size_t value_bytes(const ir::Value& v) { return size_t(shape_numel(v.shape)) * dtype_size(v.dtype); }
size_t aligned(size_t bytes) {
  return (bytes + cuda::kDeviceAlignment - 1) / cuda::kDeviceAlignment * cuda::kDeviceAlignment;
}

// The KernelInit the CUDA provider judges a node by (the same one create_node_kernel builds).
std::string node_reason(const ir::Graph& g, const ir::Node& node) {
  std::vector<ir::TensorType> types(node.inputs.size());
  KernelInit init{node, {}, {}, {}, 1};
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const int v = node.inputs[k];
    if (v >= 0) types[k] = ir::TensorType{g.value(v).dtype, g.value(v).shape, g.value(v).has_shape};
    init.inputs.push_back(v >= 0 ? &types[k] : nullptr);
    init.constants.push_back(v >= 0 ? g.initializer(v) : nullptr);
  }
  for (int o : node.outputs)
    init.outputs.push_back(o >= 0 ? ir::TensorType{g.value(o).dtype, g.value(o).shape, g.value(o).has_shape}
                                  : ir::TensorType{});
  return cuda::cuda_unsupported_reason(init);
}

}  // namespace

CudaMemoryLayout cuda_memory_layout(const ir::Graph& g, const MemoryPlan& plan) {
  CudaMemoryLayout l;
  l.arena_bytes = cuda::device_bytes(plan.arena_bytes);
  for (const auto& [id, t] : g.initializers) {
    l.weight_offsets[id] = l.weight_bytes;
    l.weight_bytes += aligned(t.nbytes());
  }
  for (int v : g.inputs) {
    l.input_offsets[v] = l.input_bytes;
    l.input_bytes += aligned(value_bytes(g.value(v)));
  }
  return l;
}

std::vector<std::string> cuda_unsupported_nodes(const ir::Graph& g, const MemoryPlan& plan, cuda::Fp32Gemm) {
  std::vector<std::string> lines;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (n < plan.view_nodes.size() && plan.view_nodes[n]) continue;  // no kernel runs
    const ir::Node& node = g.nodes[n];
    std::string why = node_reason(g, node);
    for (int o : node.outputs)
      if (why.empty() && o >= 0 &&
          (size_t(o) >= plan.offsets.size() || plan.offsets[size_t(o)] == MemoryPlan::kNotPlanned))
        why = "output '" + g.value(o).name + "' has no place in the static memory plan (data-dependent shape)";
    if (!why.empty()) lines.push_back(node.describe() + ": " + why);
  }
  return lines;
}

struct CudaExecutor::Device {
  cuda::Stream stream = nullptr;
  std::shared_ptr<cuda::DeviceBuffer> arena, weights, inputs;
  ~Device() {
    if (stream) cuda::stream_destroy(stream);
  }
};

CudaExecutor::CudaExecutor(ir::Graph graph, MemoryPlan plan, CudaExecutorOptions options)
    : graph_(std::move(graph)), plan_(std::move(plan)), options_(options) {
  validate_plan(graph_, plan_);
  const auto unsupported = cuda_unsupported_nodes(graph_, plan_, options_.fp32_gemm);
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string& line : unsupported) list += "\n  " + line;
    fail("CUDA backend: ", unsupported.size(), " node(s) have no CUDA kernel (no CPU fallback):", list);
  }
  cuda::require_device();
  layout_ = cuda_memory_layout(graph_, plan_);
  device_ = std::make_unique<Device>();
  cuda::check_cuda(cuda::stream_create(&device_->stream), "CUDA backend");
  device_->arena = std::make_shared<cuda::DeviceBuffer>(layout_.arena_bytes);
  device_->weights = std::make_shared<cuda::DeviceBuffer>(layout_.weight_bytes);
  device_->inputs = std::make_shared<cuda::DeviceBuffer>(layout_.input_bytes);
  cuda::check_cuda(cuda::fill_bytes(device_->arena->data(), 0, layout_.arena_bytes, device_->stream),
                   "zeroing the arena");
  values_.assign(graph_.values.size(), Tensor());
  for (size_t v = 0; v < graph_.values.size(); ++v)
    if (plan_.offsets[v] != MemoryPlan::kNotPlanned)
      values_[v] =
          cuda::device_tensor(graph_.values[v].dtype, graph_.values[v].shape, device_->arena, size_t(plan_.offsets[v]));
  for (const auto& [id, t] : graph_.initializers) {  // the weights: uploaded once
    const size_t off = layout_.weight_offsets.at(id);
    if (t.nbytes())
      cuda::check_cuda(cuda::copy_to_device(static_cast<std::byte*>(device_->weights->data()) + off, t.raw(),
                                            t.nbytes(), device_->stream),
                       "uploading weight '" + graph_.value(id).name + "'");
    values_[size_t(id)] = cuda::device_tensor(t.dtype(), t.shape(), device_->weights, off);
  }
  for (const auto& [id, off] : layout_.input_offsets)
    values_[size_t(id)] = cuda::device_tensor(graph_.value(id).dtype, graph_.value(id).shape, device_->inputs, off);
  make_kernels();
  cuda::check_cuda(cuda::stream_sync(device_->stream), "CUDA backend: loading the model");
}

CudaExecutor::~CudaExecutor() {
  if (device_ && device_->stream) cuda::stream_sync(device_->stream);  // no kernel may outlive its buffers
}

void CudaExecutor::make_kernels() {
  cuda::StreamScope scope(device_->stream);  // kernels upload converted weights on it
  const std::vector<const Provider*> providers{&cuda::cuda_provider(options_.fp32_gemm)};
  kernels_.resize(graph_.nodes.size());
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    if (plan_.view_nodes[n]) continue;
    std::string chosen;
    kernels_[n] = create_node_kernel(graph_, graph_.nodes[n], providers, 1, &chosen);
  }
}

void CudaExecutor::copy_inputs(const std::map<std::string, Tensor>& inputs) {
  for (int v : graph_.inputs) {
    const ir::Value& val = graph_.value(v);
    auto it = inputs.find(val.name);
    SEGMUX_CHECK(it != inputs.end(), "missing input '", val.name, "' (", dtype_name(val.dtype), " ",
                 shape_str(val.shape), ")");
    const Tensor& t = it->second;
    SEGMUX_CHECK(t.defined(), "input '", val.name, "' is an empty tensor");
    SEGMUX_CHECK(t.dtype() == val.dtype, "input '", val.name, "' is ", dtype_name(t.dtype()), ", the model expects ",
                 dtype_name(val.dtype));
    SEGMUX_CHECK(t.shape() == val.shape, "input '", val.name, "' has shape ", shape_str(t.shape()),
                 ", the model expects ", shape_str(val.shape));
    if (t.nbytes())
      cuda::check_cuda(cuda::copy_to_device(values_[size_t(v)].raw(), t.raw(), t.nbytes(), device_->stream),
                       "input '" + val.name + "'");
  }
  for (const auto& [name, t] : inputs) {
    const int v = graph_.find_value(name);
    bool is_input = false;
    for (int in : graph_.inputs) is_input |= in == v;
    SEGMUX_CHECK(is_input, "'", name, "' is not an input of the model");
  }
}

void CudaExecutor::run_nodes() {
  cuda::StreamScope scope(device_->stream);
  std::vector<const Tensor*> vin;
  std::vector<Tensor*> vout;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    if (plan_.view_nodes[n]) continue;  // the output view already shows the input's bytes
    const ir::Node& node = graph_.nodes[n];
    vin.assign(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (node.inputs[k] >= 0) vin[k] = &values_[size_t(node.inputs[k])];
    vout.assign(node.outputs.size(), nullptr);
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k] >= 0) vout[k] = &values_[size_t(node.outputs[k])];
    KernelContext ctx{node, vin, vout, 1};
    kernels_[n]->run(ctx);
  }
}

std::map<std::string, Tensor> CudaExecutor::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<std::string> all;
  for (int v : graph_.outputs) all.push_back(graph_.value(v).name);
  return run(inputs, all);
}

std::map<std::string, Tensor> CudaExecutor::run(const std::map<std::string, Tensor>& inputs,
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
  copy_inputs(inputs);
  run_nodes();
  std::map<std::string, Tensor> result;
  for (int v : copy_out) {
    const Tensor& d = values_[size_t(v)];
    Tensor host(d.dtype(), d.shape());
    if (host.nbytes())
      cuda::check_cuda(cuda::copy_to_host(host.raw(), d.raw(), host.nbytes(), device_->stream),
                       "output '" + graph_.value(v).name + "'");
    result[graph_.value(v).name] = std::move(host);
  }
  cuda::check_cuda(cuda::stream_sync(device_->stream), "CUDA backend: running the model");
  return result;
}

}  // namespace segmux
