#include "apps/cmd_util.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "apps/cli.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "onnx/onnx_io.h"

namespace segmux::apps {

Engine parse_engine(const std::string& name) {
  if (name == "auto") return Engine::automatic;
  if (name == "session") return Engine::session;
  if (name == "compiled") return Engine::compiled;
  usage_fail("--engine: unknown engine '", name, "' (auto, session, compiled)");
}

const ir::Graph& OpenedModelFile::graph() const {
  if (executor_) return executor_->graph();
  return interpreter_->graph();
}

std::map<std::string, Tensor> OpenedModelFile::run(const std::map<std::string, Tensor>& inputs) {
  return executor_ ? executor_->run(inputs) : interpreter_->run(inputs);
}

std::string OpenedModelFile::engine_name() const { return engine_; }

bool is_smx_file(const std::string& path) { return detect_model_format(path) == ModelFormat::smx; }

ir::Graph import_model_graph(const std::string& path, const std::map<std::string, Shape>& input_shapes,
                             bool infer_shapes) {
  onnx_io::ImportOptions io;
  io.input_shapes = input_shapes;
  io.infer_shapes = infer_shapes;
  return onnx_io::import_onnx_file(path, io);
}

std::unique_ptr<OpenedModelFile> open_model(const std::string& path, const OpenOptions& opt) {
  check_threads(opt.threads, "--threads");
  auto r = std::make_unique<OpenedModelFile>();
  ExecutorOptions eo{opt.threads, !opt.reference_kernels};
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  auto t0 = clock::now();
  if (is_smx_file(path)) {
    SEGMUX_USAGE_CHECK(opt.engine != Engine::session, "'", path,
                       "' is a compiled model; it runs only with the compiled engine");
    SEGMUX_USAGE_CHECK(opt.input_shapes.empty(), "'", path,
                       "' is a compiled model with fixed input shapes; "
                       "--input-shape applies to ONNX models only");
    r->offline_ = std::make_unique<segmux::OfflineModel>(segmux::load_offline_model_file(path));
    r->load_seconds_ = since(t0);
    t0 = clock::now();
    r->executor_ = std::make_unique<Executor>(r->offline_->graph, r->offline_->plan, eo);
    r->prepare_seconds_ = since(t0);
    r->engine_ = "compiled (.smx)";
    return r;
  }
  ir::Graph g = import_model_graph(path, opt.input_shapes);
  r->load_seconds_ = since(t0);
  t0 = clock::now();
  if (opt.engine == Engine::compiled) {
    compiler::CompileOptions co;
    co.precision = opt.precision;
    auto c = compiler::compile_graph(std::move(g), co);
    r->executor_ = std::make_unique<Executor>(std::move(c.graph), std::move(c.plan), eo);
    r->engine_ = "compiled (in memory)";
  } else {
    r->interpreter_ =
        std::make_unique<Interpreter>(std::move(g), InterpreterOptions{opt.threads, !opt.reference_kernels});
    r->engine_ = "session";
  }
  r->prepare_seconds_ = since(t0);
  return r;
}

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> out;
  for (const std::string& s : specs) {
    size_t colon = s.rfind(':');
    SEGMUX_USAGE_CHECK(colon != std::string::npos && colon > 0, "--input-shape '", s, "': expected name:d0,d1,...");
    Shape shape;
    std::string dims = s.substr(colon + 1);
    size_t p = 0;
    while (p < dims.size()) {
      size_t q = dims.find(',', p);
      if (q == std::string::npos) q = dims.size();
      std::string d = dims.substr(p, q - p);
      SEGMUX_USAGE_CHECK(!d.empty() && d.find_first_not_of("0123456789") == std::string::npos && d.size() < 13,
                         "--input-shape '", s, "': '", d, "' is not a dimension");
      shape.push_back(std::stoll(d));
      p = q + 1;
    }
    out[s.substr(0, colon)] = shape;
  }
  return out;
}

std::pair<std::string, Tensor> read_input_arg(const std::string& spec) {
  size_t eq = spec.find('=');
  SEGMUX_USAGE_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(), "--input '", spec,
                     "': expected NAME=FILE (.npy or .safetensors)");
  std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
  auto ends_with = [&](const std::string& suffix) {
    return file.size() >= suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".npy")) return {name, read_npy(file)};
  if (ends_with(".safetensors")) {
    TensorFile tf = read_safetensors(file);
    if (tf.has(name)) return {name, tf.at(name)};
    SEGMUX_CHECK(tf.names.size() == 1, "--input ", spec, ": '", file, "' has no tensor named '", name, "' and holds ",
                 tf.names.size(), " tensors");
    return {name, tf.at(tf.names[0])};
  }
  usage_fail("--input '", spec, "': unknown file type (expected .npy or .safetensors)");
}

size_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

}  // namespace segmux::apps
