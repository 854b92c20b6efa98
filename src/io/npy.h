// NumPy .npy read/write (format versions 1.0, 2.0 and 3.0; little-endian; C order).
// Supported dtypes: <f4 <f8 <f2 <i8 <i4 |i1 |u1 |b1 (bf16 has no NumPy dtype: write it as f32).
// Anything else (big-endian, Fortran order, object arrays, a malformed header, truncated data) is a
// segmux::Error naming the problem.
#pragma once
#include <memory>
#include <string>

#include "core/tensor.h"

namespace segmux {

Tensor read_npy(const std::string& path);
Tensor parse_npy(std::shared_ptr<Storage> bytes, const std::string& what);  // data aliases `bytes` when aligned
// Writes version 1.0 (2.0 when the header needs it) atomically.
void write_npy(const std::string& path, const Tensor& t);
std::string npy_bytes(const Tensor& t);

}  // namespace segmux
