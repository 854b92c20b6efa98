// Internal to src/onnx: ONNX element types and TensorProto <-> Tensor conversion.
#pragma once
#include <map>
#include <memory>
#include <string>

#include <onnx/onnx_pb.h>

#include "core/tensor.h"

namespace segmux::onnx_io::detail {

// Maps an ONNX TensorProto::DataType to ours; false for types segmux tensors cannot hold.
bool dtype_from_onnx(int elem_type, DType* out);
int dtype_to_onnx(DType t);
// "FLOAT16", "STRING", ... for error messages.
std::string onnx_type_name(int elem_type);

// Resolves external data files (relative to base_dir), mapping each file once.
class ExternalData {
 public:
  explicit ExternalData(std::string base_dir) : base_dir_(std::move(base_dir)) {}
  // The bytes [offset, offset+length) of `location`; throws when out of range or unsafe.
  std::shared_ptr<Storage> file(const std::string& location, const std::string& what);
  const std::string& base_dir() const { return base_dir_; }

 private:
  std::string base_dir_;
  std::map<std::string, std::shared_ptr<Storage>> files_;
};

// Converts a TensorProto (raw_data, typed fields or external data). `what` names it in errors.
Tensor tensor_from_proto(const onnx::TensorProto& p, ExternalData& external, const std::string& what);
// Writes t into p as raw_data (little-endian, as ONNX specifies).
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p);

}  // namespace segmux::onnx_io::detail
