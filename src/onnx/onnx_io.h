// ONNX in and out: any IR graph <-> a standard ONNX ModelProto (opset 17, default domain).
#pragma once
#include <string>

#include "ir/graph.h"

namespace segmux::onnx_io {

struct ExportOptions {
  int opset = 17;
  std::string producer = "segmux";
  // Initializers go to an external data file beside the model when the model would exceed this
  // (protobuf cannot hold more than 2 GB in one message).
  size_t external_data_threshold = size_t(1800) << 20;
};

// Reads, runs the ONNX checker and shape inference, converts. Unsupported constructs (subgraphs,
// unknown types, ...) are errors naming the node. Input shapes may be fixed by `input_shapes`
// ("name" -> dims) before shape inference.
ir::Graph import_onnx_file(const std::string& path);
ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& what);

void export_onnx_file(const ir::Graph& g, const std::string& path, const ExportOptions& opt = {});
std::string export_onnx_bytes(const ir::Graph& g, const ExportOptions& opt = {});

}  // namespace segmux::onnx_io
