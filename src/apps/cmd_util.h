// Helpers shared by the model commands (inspect, check, compile, run, verify, bench).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "core/cpu_cores.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/interpreter.h"
#include "verify/seeded_inputs.h"

namespace segmux::apps {

// How a model file runs: a .smx file always through the Executor; an ONNX file through the Interpreter
// (interpreter) or compiled in memory (passes + plan + Executor, as `segmux compile` would).
enum class Engine { automatic, session, compiled };
Engine parse_engine(const std::string& name);  // auto | session | compiled

class OpenedModelFile {
 public:
  const ir::Graph& graph() const;  // the graph that runs (signature: inputs, outputs)
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  std::string engine_name() const;
  const Executor* executor() const { return executor_.get(); }
  const segmux::OfflineModel* offline() const { return offline_.get(); }

  std::unique_ptr<Interpreter> interpreter_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<segmux::OfflineModel> offline_;
  std::string engine_;
  double load_seconds_ = 0;     // reading the file (.smx: map + checksums + parse; ONNX: import)
  double prepare_seconds_ = 0;  // compiling (ONNX, compiled engine) + creating kernels + the arena
};

struct OpenOptions {
  Engine engine = Engine::automatic;
  int threads = usable_cores();
  bool reference_kernels = false;
  std::map<std::string, Shape> input_shapes;
  std::string precision = "fp32";
};
// By the first bytes (segmux::detect_model_format): errors for an empty, unreadable or non-regular
// file and for a *.smx file without the .smx magic.
bool is_smx_file(const std::string& path);
std::unique_ptr<OpenedModelFile> open_model(const std::string& path, const OpenOptions& opt);
ir::Graph import_model_graph(const std::string& path, const std::map<std::string, Shape>& input_shapes = {},
                             bool infer_shapes = true);

// "name:d0,d1,..." -> shapes.
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);
// NAME=FILE with FILE a .npy or .safetensors (the tensor called NAME, else the file's only tensor).
std::pair<std::string, Tensor> read_input_arg(const std::string& spec);

// Peak resident set size of this process so far, bytes.
size_t peak_rss_bytes();
std::string human_bytes(double bytes);

}  // namespace segmux::apps
