// .safetensors read (mmapped, zero-copy) and write (atomic).
// Format: u64 little-endian header length, JSON header {name: {dtype, shape, data_offsets}}, data.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/files.h"

namespace segmux {

struct TensorFile {
  std::vector<std::string> names;  // in file order
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" entry
  const Tensor& at(const std::string& name) const;
  bool has(const std::string& name) const { return tensors.count(name) != 0; }
};

// Reads a .safetensors file. Tensors alias one read-only mmap of the file.
// Supported dtypes: F32 F16 BF16 F64 I64 I32 I8 U8 BOOL. Anything malformed -> segmux::Error.
TensorFile read_safetensors(const std::string& path);
TensorFile parse_safetensors(std::shared_ptr<Storage> bytes, const std::string& what);

// Writes tensors (in the given order) atomically: a temporary file renamed into place.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace segmux
