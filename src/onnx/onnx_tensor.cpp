#include "onnx/onnx_tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "io/safetensors.h"

namespace segmux::onnx_io::detail {

using onnx::TensorProto;
namespace fs = std::filesystem;

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

namespace {

// True when `p` is `root` or lies below it (both absolute and free of symlinks, "." and "..").
bool is_inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (r->empty()) continue;  // a trailing separator of the root
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

// Walks `location` component by component below `root` (canonical), following only symlinks whose
// target stays inside root. Returns the symlink-free path and its lstat.
fs::path resolve_inside(const fs::path& root, const std::string& location, const std::string& what, struct stat* st) {
  fs::path p = root;
  for (const fs::path& part : fs::path(location)) {
    if (part.empty() || part == ".") continue;
    p /= part;
    SEGMUX_CHECK(::lstat(p.c_str(), st) == 0, what, ": cannot read external data '", location, "': '", p.string(),
                 "': ", std::strerror(errno));
    if (!S_ISLNK(st->st_mode)) continue;
    std::error_code ec;
    fs::path target = fs::canonical(p, ec);
    SEGMUX_CHECK(!ec, what, ": external data '", location, "': symbolic link '", p.string(),
                 "' cannot be resolved: ", ec.message());
    SEGMUX_CHECK(is_inside(root, target), what, ": external data '", location, "' leaves the model folder through",
                 " the symbolic link '", p.string(), "' (to '", target.string(), "')");
    p = target;
    SEGMUX_CHECK(::lstat(p.c_str(), st) == 0, what, ": cannot read external data '", location, "': '", p.string(),
                 "': ", std::strerror(errno));
  }
  return p;
}

// Maps a regular file read-only. O_NOFOLLOW: the path was resolved already; a symlink swapped in since
// is refused. O_NONBLOCK: a FIFO or device swapped in cannot block the open.
std::shared_ptr<Storage> map_regular_file(const fs::path& root, const fs::path& p, const struct stat& checked,
                                          const std::string& what, const std::string& location) {
  const std::string name = what + ": external data '" + location + "'";
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  SEGMUX_CHECK(fd >= 0, name, ": cannot open '", p.string(), "': ", std::strerror(errno));
  struct stat st {};
  bool same =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == checked.st_dev && st.st_ino == checked.st_ino;
  // What was opened, as the kernel names it, must still lie inside the model folder.
  char real[4096];
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(proc.c_str(), real, sizeof(real) - 1);
  if (same && n > 0) same = is_inside(root, fs::path(std::string(real, size_t(n))));
  if (!same) {
    ::close(fd);
    fail(name, " changed while it was opened (not the regular file inside the model folder that was checked)");
  }
  const size_t size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Storage::allocate(0);
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  SEGMUX_CHECK(data != MAP_FAILED, name, ": cannot map '", p.string(), "': ", std::strerror(err));
  return Storage::borrow(data, size, std::shared_ptr<void>(data, [size](void* q) { ::munmap(q, size); }));
}

}  // namespace

std::shared_ptr<Storage> ExternalData::file(const std::string& location, const std::string& what) {
  SEGMUX_CHECK(!base_dir_.empty(), what, ": external data '", location,
               "' cannot be resolved (no model folder; import the file, or set ImportOptions::base_dir)");
  SEGMUX_CHECK(!location.empty(), what, ": external data with an empty location");
  SEGMUX_CHECK(location[0] != '/', what, ": external data location '", location, "' is absolute");
  SEGMUX_CHECK(location.find('\0') == std::string::npos, what, ": external data location has a NUL byte");
  for (const fs::path& part : fs::path(location))
    SEGMUX_CHECK(part != "..", what, ": external data location '", location, "' leaves the model folder");
  auto it = files_.find(location);
  if (it != files_.end()) return it->second;
  std::error_code ec;
  const fs::path root = fs::canonical(base_dir_, ec);
  SEGMUX_CHECK(!ec, what, ": external data '", location, "': model folder '", base_dir_, "': ", ec.message());
  struct stat st {};
  const fs::path p = resolve_inside(root, location, what, &st);
  SEGMUX_CHECK(S_ISREG(st.st_mode), what, ": external data '", location, "' is not a regular file");
  std::shared_ptr<Storage> s = map_regular_file(root, p, st, what, location);
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
void copy_typed(const Src& field, Tensor& t) {
  Dst* out = static_cast<Dst*>(t.raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

// The typed field a tensor of `dt` keeps its values in when it has no raw_data, and how many it holds.
std::pair<const char*, int64_t> typed_field(const TensorProto& p, DType dt) {
  switch (dt) {
    case DType::f32:
      return {"float_data", p.float_data_size()};
    case DType::f64:
      return {"double_data", p.double_data_size()};
    case DType::i64:
      return {"int64_data", p.int64_data_size()};
    default:  // i32 i8 u8 bool, and f16/bf16 bit patterns
      return {"int32_data", p.int32_data_size()};
  }
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

  // The bytes present must match the shape before anything of that shape is allocated: a few bytes of
  // protobuf can declare terabytes.
  if (p.has_raw_data()) {
    SEGMUX_CHECK(p.raw_data().size() == nbytes, what, ": raw_data has ", p.raw_data().size(), " bytes but shape ",
                 shape_str(shape), " of ", dtype_name(dt), " needs ", nbytes);
  } else {
    auto [field, count] = typed_field(p, dt);
    SEGMUX_CHECK(count == numel, what, ": ", field, " has ", count, " values for shape ", shape_str(shape));
  }
  Tensor t(dt, shape);
  if (p.has_raw_data()) {
    if (nbytes) std::memcpy(t.raw(), p.raw_data().data(), nbytes);
    if (dt == DType::boolean) {
      uint8_t* b = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;  // a bool byte must be 0 or 1
    }
    return t;
  }
  switch (dt) {
    case DType::f32:
      copy_typed<decltype(p.float_data()), float>(p.float_data(), t);
      break;
    case DType::f64:
      copy_typed<decltype(p.double_data()), double>(p.double_data(), t);
      break;
    case DType::i64:
      copy_typed<decltype(p.int64_data()), int64_t>(p.int64_data(), t);
      break;
    case DType::i32:
      copy_typed<decltype(p.int32_data()), int32_t>(p.int32_data(), t);
      break;
    case DType::i8:
      copy_typed<decltype(p.int32_data()), int8_t>(p.int32_data(), t);
      break;
    case DType::u8:
      copy_typed<decltype(p.int32_data()), uint8_t>(p.int32_data(), t);
      break;
    case DType::f16:
    case DType::bf16:  // 16-bit patterns stored in int32_data
      copy_typed<decltype(p.int32_data()), uint16_t>(p.int32_data(), t);
      break;
    case DType::boolean: {
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
