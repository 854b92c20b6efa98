// OrtModel: runs an ONNX model through ONNX Runtime (CPU). Two users: the second engine
// (`--engine ort`, pipeline/backends/ort_backend.h) and the verification peer our tests and benchmarks
// compare against (verify/ort_peer.h). ONNX Runtime is optional: libonnxruntime.so is loaded with
// dlopen at run time, so nothing links against it. The search order is ort_library_candidates()'s.
// When the C API header was absent at build time, or no library loads, ort_available() says why (every
// path tried) and OrtModel throws.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace segmux {

// The libonnxruntime.so files to try, in order: `env_lib` (SEGMUX_ORT_LIB) alone when set, since an
// explicit choice must not be hidden by a fallback; else the copy scripts/setup.sh put in the source
// tree's third_party/ort, but only for a binary still inside the build tree that was configured with it
// (an installed segmux never reaches into a build tree); else libonnxruntime.so beside the binary or
// library running this code (`module_dir`, where a deployment may place it); else the loader's own search
// path (LD_LIBRARY_PATH, ldconfig).
std::vector<std::string> ort_library_candidates(const std::string& env_lib, const std::string& module_dir,
                                                const std::string& build_dir, const std::string& build_tree_lib);

// True when ONNX Runtime can be used; otherwise *why (if given) says what is missing.
bool ort_available(std::string* why = nullptr);

struct OrtModelOptions {
  int num_threads = 1;
  // false: ORT_DISABLE_ALL (no graph rewrites; closest to the model as written).
  bool optimize = true;
  // false: ONNX Runtime's intra-op threads sleep instead of spinning between runs. A pipeline of
  // several sessions (one per candidate) wants that: each session's spinning pool competes with the
  // others' (the fixture video ran 4-9x slower with spinning on a loaded 2-core machine).
  bool spin = true;
};

class OrtModel {
 public:
  // From a model file.
  OrtModel(const std::string& onnx_path, int num_threads = 1);
  OrtModel(const std::string& onnx_path, const OrtModelOptions& options);
  // From serialized ModelProto bytes (external data, if any, is not resolvable this way).
  static std::unique_ptr<OrtModel> from_bytes(const std::string& model_bytes, const OrtModelOptions& options = {});
  ~OrtModel();
  OrtModel(const OrtModel&) = delete;
  OrtModel& operator=(const OrtModel&) = delete;

  // Inputs by name (f32 f16 bf16 f64 i64 i32 i8 u8 bool); returns every model output by name.
  // Errors from ONNX Runtime become segmux::Error carrying its message.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }

 private:
  OrtModel() = default;
  void open(const std::string* path, const std::string* bytes, const OrtModelOptions& options);
  void* session_ = nullptr;  // OrtSession*
  std::vector<std::string> input_names_, output_names_;
};

}  // namespace segmux
