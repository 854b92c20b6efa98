#include "onnx/onnx_tensor.h"

#include <cstring>
#include <limits>

#include "io/safetensors.h"

namespace segmux::onnx_io::detail {

using onnx::TensorProto;

bool dtype_from_onnx(int elem_type, DType* out) {
  switch (elem_type) {
    case TensorProto::FLOAT:
      *out = DType::f32;
      return true;
    case TensorProto::FLOAT16:
      *out = DType::f16;
      return true;
    case TensorProto::BFLOAT16:
      *out = DType::bf16;
      return true;
    case TensorProto::DOUBLE:
      *out = DType::f64;
      return true;
    case TensorProto::INT64:
      *out = DType::i64;
      return true;
    case TensorProto::INT32:
      *out = DType::i32;
      return true;
    case TensorProto::INT8:
      *out = DType::i8;
      return true;
    case TensorProto::UINT8:
      *out = DType::u8;
      return true;
    case TensorProto::BOOL:
      *out = DType::boolean;
      return true;
    default:
      return false;
  }
}

int dtype_to_onnx(DType t) {
  switch (t) {
    case DType::f32:
      return TensorProto::FLOAT;
    case DType::f16:
      return TensorProto::FLOAT16;
    case DType::bf16:
      return TensorProto::BFLOAT16;
    case DType::f64:
      return TensorProto::DOUBLE;
    case DType::i64:
      return TensorProto::INT64;
    case DType::i32:
      return TensorProto::INT32;
    case DType::i8:
      return TensorProto::INT8;
    case DType::u8:
      return TensorProto::UINT8;
    case DType::boolean:
      return TensorProto::BOOL;
  }
  fail("dtype_to_onnx: unknown dtype");
}

std::string onnx_type_name(int elem_type) {
  if (TensorProto::DataType_IsValid(elem_type))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type));
  return "type #" + std::to_string(elem_type);
}

std::shared_ptr<Storage> ExternalData::file(const std::string& location, const std::string& what) {
  SEGMUX_CHECK(!base_dir_.empty(), what, ": external data '", location,
               "' cannot be resolved (no model folder; import the file, or set ImportOptions::base_dir)");
  SEGMUX_CHECK(!location.empty(), what, ": external data with an empty location");
  SEGMUX_CHECK(location[0] != '/', what, ": external data location '", location, "' is absolute");
  // Each path component must stay inside the model folder.
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    SEGMUX_CHECK(location.compare(start, end - start, "..") != 0, what, ": external data location '", location,
                 "' leaves the model folder");
    start = end + 1;
  }
  SEGMUX_CHECK(location.find('\0') == std::string::npos, what, ": external data location has a NUL byte");
  auto it = files_.find(location);
  if (it != files_.end()) return it->second;
  std::shared_ptr<Storage> s;
  try {
    s = map_file(base_dir_ + "/" + location);
  } catch (const std::exception& e) {
    fail(what, ": cannot read external data '", location, "': ", e.what());
  }
  files_.emplace(location, s);
  return s;
}

namespace {

int64_t checked_numel(const TensorProto& p, const std::string& what, Shape* shape) {
  int64_t n = 1;
  for (int64_t d : p.dims()) {
    SEGMUX_CHECK(d >= 0, what, ": negative dimension ", d);
    shape->push_back(d);
    if (d == 0)
      n = 0;
    else if (n != 0) {
      SEGMUX_CHECK(n <= (int64_t(1) << 40) / d, what, ": too many elements");
      n *= d;
    }
  }
  return n;
}

template <typename Src, typename Dst>
void copy_typed(const Src& field, Tensor& t, const std::string& what, const char* field_name) {
  SEGMUX_CHECK(int64_t(field.size()) == t.numel(), what, ": ", field_name, " has ", field.size(), " values for shape ",
               shape_str(t.shape()));
  Dst* out = static_cast<Dst*>(t.raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& p, ExternalData& external, const std::string& what) {
  SEGMUX_CHECK(p.has_data_type(), what, ": tensor has no data type");
  DType dt;
  SEGMUX_CHECK(dtype_from_onnx(p.data_type(), &dt), what, ": element type ", onnx_type_name(p.data_type()),
               " is not supported (segmux supports FLOAT FLOAT16 BFLOAT16 DOUBLE INT64 INT32 INT8 UINT8 BOOL)");
  SEGMUX_CHECK(!p.has_segment(), what, ": segmented tensors are not supported");
  Shape shape;
  const int64_t numel = checked_numel(p, what, &shape);
  const size_t nbytes = size_t(numel) * dtype_size(dt);

  if (p.data_location() == TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : p.external_data()) {
      const std::string& k = kv.key();
      try {
        if (k == "location")
          location = kv.value();
        else if (k == "offset")
          offset = std::stoll(kv.value());
        else if (k == "length")
          length = std::stoll(kv.value());
      } catch (const std::exception&) {
        fail(what, ": external data ", k, " '", kv.value(), "' is not a number");
      }
    }
    SEGMUX_CHECK(offset >= 0, what, ": negative external data offset");
    SEGMUX_CHECK(length < 0 || size_t(length) == nbytes, what, ": external data length ", length, " but shape ",
                 shape_str(shape), " needs ", nbytes, " bytes");
    std::shared_ptr<Storage> file = external.file(location, what);
    SEGMUX_CHECK(size_t(offset) <= file->nbytes && nbytes <= file->nbytes - size_t(offset), what, ": external data [",
                 offset, ", +", nbytes, ") lies outside '", location, "' (", file->nbytes, " bytes)");
    // Aligned data is used in place (the mapping stays alive); unaligned data is copied.
    if (size_t(offset) % 64 == 0 && nbytes > 0) return Tensor(dt, shape, file, size_t(offset));
    Tensor t(dt, shape);
    if (nbytes) std::memcpy(t.raw(), file->data + offset, nbytes);
    return t;
  }

  Tensor t(dt, shape);
  if (p.has_raw_data()) {
    SEGMUX_CHECK(p.raw_data().size() == nbytes, what, ": raw_data has ", p.raw_data().size(), " bytes but shape ",
                 shape_str(shape), " of ", dtype_name(dt), " needs ", nbytes);
    if (nbytes) std::memcpy(t.raw(), p.raw_data().data(), nbytes);
    if (dt == DType::boolean) {
      uint8_t* b = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;  // a bool byte must be 0 or 1
    }
    return t;
  }
  switch (dt) {
    case DType::f32:
      copy_typed<decltype(p.float_data()), float>(p.float_data(), t, what, "float_data");
      break;
    case DType::f64:
      copy_typed<decltype(p.double_data()), double>(p.double_data(), t, what, "double_data");
      break;
    case DType::i64:
      copy_typed<decltype(p.int64_data()), int64_t>(p.int64_data(), t, what, "int64_data");
      break;
    case DType::i32:
      copy_typed<decltype(p.int32_data()), int32_t>(p.int32_data(), t, what, "int32_data");
      break;
    case DType::i8:
      copy_typed<decltype(p.int32_data()), int8_t>(p.int32_data(), t, what, "int32_data");
      break;
    case DType::u8:
      copy_typed<decltype(p.int32_data()), uint8_t>(p.int32_data(), t, what, "int32_data");
      break;
    case DType::f16:
    case DType::bf16:  // 16-bit patterns stored in int32_data
      copy_typed<decltype(p.int32_data()), uint16_t>(p.int32_data(), t, what, "int32_data");
      break;
    case DType::boolean: {
      SEGMUX_CHECK(int64_t(p.int32_data().size()) == numel, what, ": int32_data has ", p.int32_data().size(),
                   " values for shape ", shape_str(shape));
      uint8_t* b = static_cast<uint8_t*>(t.raw());
      for (int i = 0; i < p.int32_data().size(); ++i) b[i] = p.int32_data(i) != 0;
      break;
    }
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, TensorProto* p) {
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.nbytes())
    p->set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
  else
    p->set_raw_data("");
}

}  // namespace segmux::onnx_io::detail
