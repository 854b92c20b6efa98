// OrtPeer: runs an ONNX model through ONNX Runtime (CPU), the peer our tests and benchmarks compare
// against. ONNX Runtime is a test-only dependency: libonnxruntime.so is loaded with dlopen at run
// time, so nothing links against it. Library path: env SEGMUX_ORT_LIB, else the copy that
// scripts/setup.sh puts under <source dir>/third_party/ort/lib. When the C API header was absent at
// build time, or the library cannot be loaded, ort_available() says why and OrtPeer throws.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace segmux {

// True when ONNX Runtime can be used; otherwise *why (if given) says what is missing.
bool ort_available(std::string* why = nullptr);

struct OrtPeerOptions {
  int num_threads = 1;
  // false: ORT_DISABLE_ALL (no graph rewrites; closest to the model as written).
  bool optimize = true;
};

class OrtPeer {
 public:
  // From a model file.
  OrtPeer(const std::string& onnx_path, int num_threads = 1);
  OrtPeer(const std::string& onnx_path, const OrtPeerOptions& options);
  // From serialized ModelProto bytes (external data, if any, is not resolvable this way).
  static std::unique_ptr<OrtPeer> from_bytes(const std::string& model_bytes, const OrtPeerOptions& options = {});
  ~OrtPeer();
  OrtPeer(const OrtPeer&) = delete;
  OrtPeer& operator=(const OrtPeer&) = delete;

  // Inputs by name (f32 f16 bf16 f64 i64 i32 i8 u8 bool); returns every model output by name.
  // Errors from ONNX Runtime become segmux::Error carrying its message.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }

 private:
  OrtPeer() = default;
  void open(const std::string* path, const std::string* bytes, const OrtPeerOptions& options);
  void* session_ = nullptr;  // OrtSession*
  std::vector<std::string> input_names_, output_names_;
};

}  // namespace segmux
