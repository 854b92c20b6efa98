// ONNX in and out: any IR graph <-> a standard ONNX ModelProto (opset 17, default domain).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace segmux::onnx_io {

struct ExportOptions {
  int opset = 17;
  std::string producer = "segmux";
  // Initializers go to an external data file beside the model when the model would exceed this
  // (protobuf cannot hold more than 2 GB in one message).
  size_t external_data_threshold = size_t(1800) << 20;
  // With external data: initializers of at least this many bytes move to the data file.
  size_t external_data_min_bytes = 1024;
};

struct ImportOptions {
  // Fixes the shape of graph inputs ("name" -> dims) before shape inference; overrides symbolic or
  // unknown dims (and must agree with any fixed ones).
  std::map<std::string, Shape> input_shapes;
  // Fixes symbolic dims by name ("batch" -> 1) wherever they appear in graph inputs.
  std::map<std::string, int64_t> dim_params;
  // Folder that external data paths are relative to. import_onnx_file uses the model's folder when
  // this is empty; import_onnx_bytes refuses external data without it.
  std::string base_dir;
  // Models of an older default-domain opset are upgraded to 17 with ONNX's version converter
  // (semantics are opset 17's). false: such models are an error.
  bool upgrade_opset = true;
  // Runs segmux shape inference after conversion (when every graph input has a static shape).
  bool infer_shapes = true;
};

// Reads, runs the ONNX checker and shape inference, converts. Unsupported constructs (subgraphs,
// unknown types, ...) are errors naming the node. Input shapes may be fixed by `input_shapes`
// ("name" -> dims) before shape inference. Values whose dims stay symbolic have no static shape.
// Constant nodes become initializers; omitted optional inputs/outputs become -1.
ir::Graph import_onnx_file(const std::string& path, const ImportOptions& opt = {});
ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& what, const ImportOptions& opt = {});

// Parses serialized TensorProto bytes (no external data); `what` names it in errors.
Tensor parse_tensor_proto(const std::string& bytes, const std::string& what);

// Export writes opset `opt.opset` (plus domain "segmux" version 1 when such nodes exist), initializers as
// raw_data, value_info for every value with a known type, and runs the ONNX checker on the result.
// export_onnx_file writes "<path>.data" beside the model when the initializers exceed the threshold;
// export_onnx_bytes refuses such graphs (a single message cannot hold them).
void export_onnx_file(const ir::Graph& g, const std::string& path, const ExportOptions& opt = {});
std::string export_onnx_bytes(const ir::Graph& g, const ExportOptions& opt = {});

}  // namespace segmux::onnx_io
