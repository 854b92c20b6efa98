#include "io/pytorch_zip.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "io/alloc_guard.h"
#include "io/file_kind.h"
#include "io/files.h"
#include "io/pickle.h"
#include "io/printable.h"
#include "io/safetensors.h"

namespace segmux {

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kAlignment = 64;  // torch.save aligns every entry's data to 64 bytes

uint16_t rd16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t rd32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t rd64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// a + b <= limit without overflow.
bool fits(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

}  // namespace

bool looks_like_zip(const Storage& bytes) { return bytes.nbytes >= 4 && rd32(bytes.data) == kLocalHeaderSig; }

ZipReader::ZipReader(std::shared_ptr<Storage> file, std::string what) : file_(std::move(file)), what_(printable(what)) {
  const std::byte* base = file_->data;
  const uint64_t size = file_->nbytes;
  SEGMUX_CHECK(size >= 22, what_, ": too short to be a zip archive (", size, " bytes)");
  // End-of-central-directory record: the last 22 bytes plus an optional comment of up to 64 KiB.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  for (uint64_t pos = size - 22 + 1; pos-- > lowest;) {
    if (rd32(base + pos) == kEndOfCentralDirSig && pos + 22 + rd16(base + pos + 20) <= size) {
      eocd = pos;
      break;
    }
  }
  SEGMUX_CHECK(eocd != UINT64_MAX, what_, ": no zip end-of-central-directory record (truncated or not a zip)");
  uint64_t count = rd16(base + eocd + 10);
  uint64_t cd_size = rd32(base + eocd + 12);
  uint64_t cd_offset = rd32(base + eocd + 16);
  SEGMUX_CHECK(rd16(base + eocd + 4) == 0 && rd16(base + eocd + 6) == 0, what_,
               ": multi-disk zip archives are not supported");
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    SEGMUX_CHECK(eocd >= 20 && rd32(base + eocd - 20) == kZip64LocatorSig, what_,
                 ": zip64 archive without a zip64 end-of-central-directory locator");
    uint64_t z64 = rd64(base + eocd - 20 + 8);
    SEGMUX_CHECK(fits(z64, 56, size) && rd32(base + z64) == kZip64EndSig, what_,
                 ": zip64 end-of-central-directory record missing or out of bounds");
    count = rd64(base + z64 + 32);
    cd_size = rd64(base + z64 + 40);
    cd_offset = rd64(base + z64 + 48);
  }
  SEGMUX_CHECK(fits(cd_offset, cd_size, size), what_, ": central directory [", cd_offset, ", +", cd_size,
               ") lies outside the ", size, "-byte file (truncated?)");
  SEGMUX_CHECK(count <= cd_size / 46, what_, ": central directory claims ", count, " entries in ", cd_size, " bytes");
  entries_.reserve(size_t(count));
  uint64_t pos = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t k = 0; k < count; ++k) {
    SEGMUX_CHECK(fits(pos, 46, cd_end) && rd32(base + pos) == kCentralHeaderSig, what_, ": central directory entry ", k,
                 " is damaged");
    const std::byte* h = base + pos;
    ZipEntry e;
    const uint16_t flags = rd16(h + 8);
    e.method = rd16(h + 10);
    e.crc32 = rd32(h + 16);
    e.compressed_size = rd32(h + 20);
    e.uncompressed_size = rd32(h + 24);
    const uint16_t name_len = rd16(h + 28), extra_len = rd16(h + 30), comment_len = rd16(h + 32);
    e.local_header_offset = rd32(h + 42);
    SEGMUX_CHECK(fits(pos + 46, uint64_t(name_len) + extra_len + comment_len, cd_end), what_,
                 ": central directory entry ", k, " runs past the directory");
    e.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
    SEGMUX_CHECK(!(flags & 1), what_, ": entry '", printable(e.name), "' is encrypted");
    // ZIP64 extended information: the 0xFFFFFFFF fields, in this order.
    const std::byte* x = h + 46 + name_len;
    for (uint32_t off = 0; off + 4 <= extra_len;) {
      uint16_t id = rd16(x + off), len = rd16(x + off + 2);
      SEGMUX_CHECK(off + 4 + len <= extra_len, what_, ": entry '", printable(e.name), "' has a damaged extra field");
      if (id == 0x0001) {
        uint32_t q = off + 4;
        auto next64 = [&](uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          SEGMUX_CHECK(q + 8 <= off + 4 + len, what_, ": entry '", printable(e.name), "' has a short zip64 field");
          field = rd64(x + q);
          q += 8;
        };
        next64(e.uncompressed_size);
        next64(e.compressed_size);
        next64(e.local_header_offset);
      }
      off += 4 + len;
    }
    SEGMUX_CHECK(fits(e.local_header_offset, 30, size) && rd32(base + e.local_header_offset) == kLocalHeaderSig, what_,
                 ": local header of entry '", printable(e.name), "' is missing or out of bounds (truncated?)");
    const std::byte* lh = base + e.local_header_offset;
    e.data_offset = e.local_header_offset + 30 + rd16(lh + 26) + rd16(lh + 28);
    SEGMUX_CHECK(fits(e.data_offset, e.compressed_size, size), what_, ": data of entry '", printable(e.name), "' [",
                 e.data_offset, ", +", e.compressed_size, ") lies outside the ", size, "-byte file (truncated?)");
    SEGMUX_CHECK(e.method == 0 || e.method == 8, what_, ": entry '", printable(e.name), "' uses compression method ",
                 e.method, " (only stored and deflate are supported)");
    SEGMUX_CHECK(e.method != 0 || e.compressed_size == e.uncompressed_size, what_, ": stored entry '",
                 printable(e.name), "' has different compressed and uncompressed sizes");
    SEGMUX_CHECK(by_name_.emplace(e.name, entries_.size()).second, what_, ": duplicate entry '", printable(e.name),
                 "'");
    entries_.push_back(std::move(e));
    pos += 46 + uint64_t(name_len) + extra_len + comment_len;
  }
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::shared_ptr<Storage> ZipReader::read(const ZipEntry& e) const {
  if (e.method == 0) {
    // A view that keeps the whole mapping alive.
    return Storage::borrow(file_->data + e.data_offset, size_t(e.uncompressed_size), file_);
  }
  // Deflate can expand at most ~1032:1; a larger claim is a lie that would only waste memory.
  SEGMUX_CHECK(e.uncompressed_size <= e.compressed_size * 1032 + 1024, what_, ": entry '", printable(e.name),
               "' claims an impossible inflated size ", e.uncompressed_size);
  auto out = Storage::allocate(size_t(e.uncompressed_size));
  z_stream zs{};
  SEGMUX_CHECK(inflateInit2(&zs, -MAX_WBITS) == Z_OK, what_, ": zlib init failed");
  const std::byte* src = file_->data + e.data_offset;
  uint64_t in_left = e.compressed_size, out_done = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    uInt in_chunk = uInt(std::min<uint64_t>(in_left, 1u << 30));
    uInt out_chunk = uInt(std::min<uint64_t>(e.uncompressed_size - out_done, 1u << 30));
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(src + (e.compressed_size - in_left)));
    zs.avail_in = in_chunk;
    zs.next_out = reinterpret_cast<Bytef*>(out->data + out_done);
    zs.avail_out = out_chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    out_done += out_chunk - zs.avail_out;
    if (rc == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk) rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&zs);
  SEGMUX_CHECK(rc == Z_STREAM_END && out_done == e.uncompressed_size, what_, ": entry '", printable(e.name),
               "' does not inflate to its recorded size (damaged data)");
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t off = 0; off < out_done; off += 1u << 30)
    crc =
        crc32(crc, reinterpret_cast<const Bytef*>(out->data + off), uInt(std::min<uint64_t>(out_done - off, 1u << 30)));
  SEGMUX_CHECK(uint32_t(crc) == e.crc32, what_, ": entry '", printable(e.name), "' fails its CRC-32 check");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Checkpoint reading

namespace {

struct StorageType {
  const char* global_name;  // torch.<name>
  DType dtype;              // element type (for complex: the component type)
  bool complex;
  size_t element_bytes;  // bytes of one storage element
};

constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DType::f32, false, 4},         {"DoubleStorage", DType::f64, false, 8},
    {"HalfStorage", DType::f16, false, 2},          {"BFloat16Storage", DType::bf16, false, 2},
    {"LongStorage", DType::i64, false, 8},          {"IntStorage", DType::i32, false, 4},
    {"CharStorage", DType::i8, false, 1},           {"ByteStorage", DType::u8, false, 1},
    {"BoolStorage", DType::boolean, false, 1},      {"ComplexFloatStorage", DType::f32, true, 8},
    {"ComplexDoubleStorage", DType::f64, true, 16},
};

const StorageType* storage_type_by_name(const std::string& name) {
  for (auto& t : kStorageTypes)
    if (name == t.global_name) return &t;
  return nullptr;
}

const char* storage_name_for(DType dt, bool complex) {
  for (auto& t : kStorageTypes)
    if (t.dtype == dt && t.complex == complex) return t.global_name;
  fail("no PyTorch storage type for ", dtype_name(dt), complex ? " complex" : "");
}

struct StorageRef {
  std::string key;
  const StorageType* type = nullptr;
  int64_t numel = 0;
};

struct TensorRef {
  std::shared_ptr<StorageRef> storage;
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

constexpr const char* kTensorType = "tensor";
constexpr const char* kStorageRefType = "storage";

std::vector<int64_t> int_tuple(const pickle::Value& v, const char* what_field, const std::string& what) {
  SEGMUX_CHECK(v.is(pickle::Value::Kind::tuple), what, ": tensor ", what_field, " is ", pickle::describe(v),
               ", not a tuple");
  std::vector<int64_t> out;
  for (auto& e : v.items) {
    SEGMUX_CHECK(e->is(pickle::Value::Kind::integer), what, ": tensor ", what_field, " holds ", pickle::describe(*e),
                 ", not an int");
    out.push_back(e->i);
  }
  return out;
}

pickle::Hooks checkpoint_hooks(const std::string& what) {
  pickle::Hooks h;
  h.allowed_globals = {
      {"collections", "OrderedDict"}, {"torch._utils", "_rebuild_tensor_v2"}, {"torch._utils", "_rebuild_parameter"}};
  for (auto& t : kStorageTypes) h.allowed_globals.emplace_back("torch", t.global_name);
  // Named so that a checkpoint using it gets "not supported" (int16 has no DType) rather than "not allowed".
  h.allowed_globals.emplace_back("torch", "ShortStorage");

  h.persistent_load = [what](const pickle::Value& pid) -> pickle::ValuePtr {
    using K = pickle::Value::Kind;
    SEGMUX_CHECK(
        pid.is(K::tuple) && pid.items.size() == 5 && pid.items[0]->is(K::string) && pid.items[0]->s == "storage", what,
        ": persistent id ", pickle::describe(pid), " is not ('storage', type, key, location, numel)");
    const auto& type = *pid.items[1];
    SEGMUX_CHECK(type.is(K::global) && type.s == "torch", what, ": storage type ", pickle::describe(type),
                 " is not a torch storage class");
    auto ref = std::make_shared<StorageRef>();
    ref->type = storage_type_by_name(type.name);
    SEGMUX_CHECK(ref->type != nullptr, what, ": storage type torch.", printable(type.name), " is not supported");
    SEGMUX_CHECK(pid.items[2]->is(K::string), what, ": storage key is ", pickle::describe(*pid.items[2]));
    ref->key = pid.items[2]->s;
    SEGMUX_CHECK(!ref->key.empty() && ref->key.size() < 64 && ref->key.find('/') == std::string::npos &&
                     ref->key.find("..") == std::string::npos,
                 what, ": bad storage key '", printable(ref->key, 80), "'");
    SEGMUX_CHECK(pid.items[4]->is(K::integer) && pid.items[4]->i >= 0, what, ": storage '", printable(ref->key),
                 "' has a bad element count ", pickle::describe(*pid.items[4]));
    ref->numel = pid.items[4]->i;
    auto v = pickle::Value::make(K::opaque);
    v->opaque = ref;
    v->opaque_type = kStorageRefType;
    return v;
  };

  h.reduce = [what](const pickle::Value& fn, const pickle::Value& args) -> pickle::ValuePtr {
    using K = pickle::Value::Kind;
    const std::string full = fn.s + "." + fn.name;
    if (full == "collections.OrderedDict") {
      SEGMUX_CHECK(args.items.empty(), what, ": OrderedDict called with arguments (not supported)");
      return pickle::Value::make(K::dict);
    }
    if (full == "torch._utils._rebuild_tensor_v2") {
      SEGMUX_CHECK(args.items.size() == 6 || args.items.size() == 7, what,
                   ": _rebuild_tensor_v2 takes 6 or 7 arguments, got ", args.items.size());
      const auto& st = *args.items[0];
      SEGMUX_CHECK(st.is(K::opaque) && st.opaque_type == kStorageRefType, what, ": _rebuild_tensor_v2 storage is ",
                   pickle::describe(st));
      SEGMUX_CHECK(args.items[1]->is(K::integer), what, ": tensor storage offset is ",
                   pickle::describe(*args.items[1]));
      auto t = std::make_shared<TensorRef>();
      t->storage = std::static_pointer_cast<StorageRef>(st.opaque);
      t->offset = args.items[1]->i;
      t->size = int_tuple(*args.items[2], "size", what);
      t->stride = int_tuple(*args.items[3], "stride", what);
      SEGMUX_CHECK(t->size.size() == t->stride.size(), what, ": tensor size has ", t->size.size(),
                   " dims but stride has ", t->stride.size());
      auto v = pickle::Value::make(K::opaque);
      v->opaque = t;
      v->opaque_type = kTensorType;
      return v;
    }
    if (full == "torch._utils._rebuild_parameter") {
      SEGMUX_CHECK(args.items.size() == 3 && args.items[0]->is(K::opaque) && args.items[0]->opaque_type == kTensorType,
                   what, ": _rebuild_parameter expects (tensor, requires_grad, hooks)");
      return args.items[0];
    }
    fail(what, ": calling ", printable(full), " is not allowed");
  };

  // OrderedDict instances carry attributes (state_dict()._metadata) set by BUILD: ignored.
  h.build = [what](const pickle::ValuePtr& obj, const pickle::Value& state) -> pickle::ValuePtr {
    using K = pickle::Value::Kind;
    SEGMUX_CHECK(obj->is(K::dict) && (state.is(K::dict) || state.is(K::none)), what, ": BUILD on ",
                 pickle::describe(*obj), " with ", pickle::describe(state), " is not supported");
    return obj;
  };
  return h;
}

bool is_contiguous(const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  int64_t expected = 1;
  for (size_t d = size.size(); d-- > 0;) {
    if (size[d] != 1 && stride[d] != expected) return false;
    expected *= size[d];
  }
  return true;
}

// Copies a strided view element by element (element = `elem` bytes) into a fresh dense tensor.
void gather_strided(std::byte* dst, const std::byte* src, size_t elem, const std::vector<int64_t>& size,
                    const std::vector<int64_t>& stride) {
  const size_t rank = size.size();
  int64_t total = 1;
  for (int64_t s : size) total *= s;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * stride[d];
    std::memcpy(dst + size_t(n) * elem, src + size_t(off) * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

namespace {

TorchCheckpoint parse_checkpoint_unguarded(const std::shared_ptr<Storage>& file, const std::string& what,
                                           const std::string& unwrap_key) {
  SEGMUX_CHECK(looks_like_zip(*file), what, ": not a PyTorch zip checkpoint: it is ",
               describe_file_kind(file->data, file->nbytes));
  ZipReader zip(file, what);
  TorchCheckpoint out;
  // The archive's top folder is whatever torch.save named it: find <folder>/data.pkl.
  const ZipEntry* pkl = nullptr;
  for (auto& e : zip.entries()) {
    auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl") {
      pkl = &e;
      out.archive_name = e.name.substr(0, slash);
      break;
    }
  }
  SEGMUX_CHECK(pkl != nullptr, what, ": zip archive has no <folder>/data.pkl (not a torch.save checkpoint)");
  const std::string prefix = out.archive_name + "/";
  if (const ZipEntry* bo = zip.find(prefix + "byteorder")) {
    auto b = zip.read(*bo);
    std::string order(reinterpret_cast<const char*>(b->data), b->nbytes);
    SEGMUX_CHECK(order == "little", what, ": checkpoint byte order is '", printable(order, 40),
                 "' (only little-endian is supported)");
  }
  auto pkl_bytes = zip.read(*pkl);
  // The VM's memory budget scales with the archive, not with what a deflated data.pkl inflates to.
  pickle::ValuePtr root = pickle::unpickle(reinterpret_cast<const uint8_t*>(pkl_bytes->data), pkl_bytes->nbytes,
                                           checkpoint_hooks(what), what, file->nbytes);
  using K = pickle::Value::Kind;
  SEGMUX_CHECK(root->is(K::dict), what, ": checkpoint holds ", pickle::describe(*root), ", not a dict of tensors");
  if (!unwrap_key.empty()) {
    pickle::ValuePtr inner = root->get(unwrap_key);
    if (inner && inner->is(K::dict)) root = inner;
  }

  std::map<std::string, std::shared_ptr<Storage>> storages;  // by key, materialized once
  for (auto& [k, v] : root->entries) {
    SEGMUX_CHECK(k->is(K::string), what, ": state-dict key ", pickle::describe(*k), " is not a string");
    const std::string& name = k->s;
    SEGMUX_CHECK(v->is(K::opaque) && v->opaque_type == kTensorType, what, ": entry '", printable(name), "' is ",
                 pickle::describe(*v), ", not a tensor");
    const TensorRef& t = *std::static_pointer_cast<TensorRef>(v->opaque);
    const StorageRef& s = *t.storage;
    const std::string ctx = what + ": tensor '" + printable(name) + "'";

    // The storage bytes.
    auto& bytes = storages[s.key];
    if (!bytes) {
      const ZipEntry* e = zip.find(prefix + "data/" + s.key);
      SEGMUX_CHECK(e != nullptr, ctx, ": its storage '", printable(s.key), "' is not in the archive");
      SEGMUX_CHECK(uint64_t(s.numel) <= e->uncompressed_size / s.type->element_bytes &&
                       uint64_t(s.numel) * s.type->element_bytes == e->uncompressed_size,
                   ctx, ": storage '", printable(s.key), "' should hold ", s.numel, " ", s.type->global_name,
                   " elements (", uint64_t(s.numel) * s.type->element_bytes, " bytes) but the entry has ",
                   e->uncompressed_size, " bytes");
      bytes = zip.read(*e);
    }

    // Shape and bounds: every addressed element must lie inside the storage.
    SEGMUX_CHECK(t.offset >= 0, ctx, ": negative storage offset ", t.offset);
    int64_t numel = 1;
    __int128 last = t.offset;
    for (size_t d = 0; d < t.size.size(); ++d) {
      SEGMUX_CHECK(t.size[d] >= 0 && t.size[d] < (int64_t(1) << 40), ctx, ": bad dimension ", t.size[d]);
      SEGMUX_CHECK(t.stride[d] >= 0 && t.stride[d] < (int64_t(1) << 40), ctx, ": bad stride ", t.stride[d]);
      SEGMUX_CHECK(numel <= (int64_t(1) << 40) / std::max<int64_t>(t.size[d], 1), ctx, ": too many elements");
      numel *= t.size[d];
      if (t.size[d] > 0) last += __int128(t.size[d] - 1) * t.stride[d];
    }
    SEGMUX_CHECK(numel == 0 || last < s.numel, ctx, ": view (offset ", t.offset, ", size ", shape_str(t.size),
                 ", stride ", shape_str(t.stride), ") reaches element ", int64_t(last), " of a ", s.numel,
                 "-element storage");
    // Broadcast (stride-0) views could claim far more elements than the file holds: refused, so a
    // hostile size cannot make us allocate without bound.
    SEGMUX_CHECK(numel <= s.numel, ctx, ": view of ", numel, " elements is larger than its ", s.numel,
                 "-element storage (expanded views are not supported)");

    const size_t elem = s.type->element_bytes;
    Shape shape = t.size;
    if (s.type->complex) shape.push_back(2);  // (real, imag) as the trailing dimension
    const size_t byte_offset = size_t(t.offset) * elem;
    const size_t component = dtype_size(s.type->dtype);
    const bool aligned = (reinterpret_cast<uintptr_t>(bytes->data) + byte_offset) % component == 0;
    Tensor tensor;
    if (is_contiguous(t.size, t.stride) && aligned) {
      tensor = Tensor(s.type->dtype, shape, bytes, byte_offset);
      if (bytes->keepalive == file)
        ++out.zero_copy_tensors;
      else
        ++out.copied_tensors;
    } else {
      tensor = Tensor(s.type->dtype, shape);
      if (numel > 0)
        gather_strided(static_cast<std::byte*>(tensor.raw()), bytes->data + byte_offset, elem, t.size, t.stride);
      ++out.copied_tensors;
    }
    out.tensors.push_back(TorchTensor{name, std::move(tensor), s.type->complex});
  }
  return out;
}

}  // namespace

TorchCheckpoint parse_pytorch_checkpoint(std::shared_ptr<Storage> file, const std::string& what,
                                         const std::string& unwrap_key) {
  return guard_allocation(what, [&] { return parse_checkpoint_unguarded(file, printable(what), unwrap_key); });
}

TorchCheckpoint read_pytorch_checkpoint(const std::string& path, const std::string& unwrap_key) {
  return parse_pytorch_checkpoint(map_file(path), path, unwrap_key);
}

// ---------------------------------------------------------------------------------------------
// Checkpoint writing

namespace {

class ZipWriter {
 public:
  explicit ZipWriter(const std::string& path) : out_(path) {}

  // Writes one entry whose data starts on a 64-byte boundary: stored, or (for tests of the reader)
  // deflated.
  void add(const std::string& name, const void* data, uint64_t size, bool deflate = false) {
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t off = 0; off < size; off += 1u << 30)
      crc = crc32(crc, static_cast<const Bytef*>(data) + off, uInt(std::min<uint64_t>(size - off, 1u << 30)));
    std::string packed;
    if (deflate) {
      SEGMUX_CHECK(size < (1u << 30), "zip writer: deflating entries of 1 GiB or more is not supported");
      z_stream zs{};
      SEGMUX_CHECK(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                   "zip writer: zlib init failed");
      packed.resize(deflateBound(&zs, uLong(size)));
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<void*>(data));
      zs.avail_in = uInt(size);
      zs.next_out = reinterpret_cast<Bytef*>(packed.data());
      zs.avail_out = uInt(packed.size());
      int rc = ::deflate(&zs, Z_FINISH);
      packed.resize(packed.size() - zs.avail_out);
      deflateEnd(&zs);
      SEGMUX_CHECK(rc == Z_STREAM_END, "zip writer: deflate failed");
    }
    const uint64_t stored_size = deflate ? packed.size() : size;
    Entry e{name, uint32_t(crc), size, stored_size, uint16_t(deflate ? 8 : 0), pos_};
    const bool big = size >= 0xFFFFFFFFull || stored_size >= 0xFFFFFFFFull;
    std::string extra;
    if (big) {  // zip64 sizes in the local header
      put16(extra, 0x0001);
      put16(extra, 16);
      put64(extra, size);
      put64(extra, stored_size);
    }
    // Alignment padding as torch.save does it: an extra field "FB" filled with 'Z'.
    size_t header_end = size_t(pos_) + 30 + name.size() + extra.size() + 4;
    size_t pad = (kAlignment - header_end % kAlignment) % kAlignment;
    put16(extra, 0x4246);
    put16(extra, uint16_t(pad));
    extra.append(pad, 'Z');
    std::string h;
    put32(h, kLocalHeaderSig);
    put16(h, big ? 45 : 20);
    put16(h, 0);  // flags
    put16(h, e.method);
    put16(h, 0);     // time
    put16(h, 0x21);  // date 1980-01-01
    put32(h, e.crc);
    put32(h, big ? 0xFFFFFFFF : uint32_t(stored_size));
    put32(h, big ? 0xFFFFFFFF : uint32_t(size));
    put16(h, uint16_t(name.size()));
    put16(h, uint16_t(extra.size()));
    h += name;
    h += extra;
    write(h.data(), h.size());
    if (deflate)
      write(packed.data(), packed.size());
    else if (size)
      write(data, size);
    entries_.push_back(std::move(e));
  }

  void finish() {
    const uint64_t cd_offset = pos_;
    for (auto& e : entries_) {
      const bool big_size = e.size >= 0xFFFFFFFFull || e.stored_size >= 0xFFFFFFFFull;
      const bool big_off = e.offset >= 0xFFFFFFFFull;
      std::string extra;
      if (big_size || big_off) {
        put16(extra, 0x0001);
        put16(extra, uint16_t((big_size ? 16 : 0) + (big_off ? 8 : 0)));
        if (big_size) {
          put64(extra, e.size);
          put64(extra, e.stored_size);
        }
        if (big_off) put64(extra, e.offset);
      }
      std::string h;
      put32(h, kCentralHeaderSig);
      put16(h, (big_size || big_off) ? 45 : 20);  // made by
      put16(h, (big_size || big_off) ? 45 : 20);  // needed
      put16(h, 0);                                // flags
      put16(h, e.method);
      put16(h, 0);     // time
      put16(h, 0x21);  // date
      put32(h, e.crc);
      put32(h, big_size ? 0xFFFFFFFF : uint32_t(e.stored_size));
      put32(h, big_size ? 0xFFFFFFFF : uint32_t(e.size));
      put16(h, uint16_t(e.name.size()));
      put16(h, uint16_t(extra.size()));
      put16(h, 0);  // comment
      put16(h, 0);  // disk
      put16(h, 0);  // internal attributes
      put32(h, 0);  // external attributes
      put32(h, big_off ? 0xFFFFFFFF : uint32_t(e.offset));
      h += e.name;
      h += extra;
      write(h.data(), h.size());
    }
    const uint64_t cd_size = pos_ - cd_offset;
    const bool zip64 = entries_.size() >= 0xFFFF || cd_offset >= 0xFFFFFFFFull || cd_size >= 0xFFFFFFFFull;
    std::string t;
    if (zip64) {
      const uint64_t z64 = pos_;
      put32(t, kZip64EndSig);
      put64(t, 44);
      put16(t, 45);
      put16(t, 45);
      put32(t, 0);
      put32(t, 0);
      put64(t, entries_.size());
      put64(t, entries_.size());
      put64(t, cd_size);
      put64(t, cd_offset);
      put32(t, kZip64LocatorSig);
      put32(t, 0);
      put64(t, z64);
      put32(t, 1);
    }
    put32(t, kEndOfCentralDirSig);
    put16(t, 0);
    put16(t, 0);
    put16(t, zip64 ? 0xFFFF : uint16_t(entries_.size()));
    put16(t, zip64 ? 0xFFFF : uint16_t(entries_.size()));
    put32(t, zip64 ? 0xFFFFFFFF : uint32_t(cd_size));
    put32(t, zip64 ? 0xFFFFFFFF : uint32_t(cd_offset));
    put16(t, 0);
    write(t.data(), t.size());
    out_.commit();
  }

 private:
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size, stored_size;
    uint16_t method;
    uint64_t offset;
  };
  static void put16(std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); }
  static void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
  static void put64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
  void write(const void* p, uint64_t n) {
    out_.write(p, size_t(n));
    pos_ += n;
  }
  AtomicFile out_;
  uint64_t pos_ = 0;
  std::vector<Entry> entries_;
};

void check_archive_name(const std::string& name) {
  SEGMUX_CHECK(!name.empty() && name.find('/') == std::string::npos && name.size() < 200,
               "bad checkpoint archive name '", name, "'");
}

// The pickle: OrderedDict{name: _rebuild_tensor_v2(('storage', torch.<T>Storage, '<i>', 'cpu', numel),
// 0, size, stride, False, OrderedDict())}.
std::string state_dict_pickle(const std::vector<TorchTensorSpec>& specs) {
  pickle::Writer w;
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  for (size_t start = 0; start < specs.size(); start += 1000) {  // SETITEMS in batches, as Python does
    w.mark();
    for (size_t i = start; i < std::min(specs.size(), start + 1000); ++i) {
      const auto& s = specs[i];
      Shape size = s.shape;
      if (s.complex) size.pop_back();
      w.string(s.name);
      w.global("torch._utils", "_rebuild_tensor_v2");
      w.mark();
      w.mark();
      w.string("storage");
      w.global("torch", storage_name_for(s.dtype, s.complex));
      w.string(std::to_string(i));
      w.string("cpu");
      w.integer(shape_numel(size));
      w.tuple_from_mark();
      w.binpersid();
      w.integer(0);
      w.mark();
      for (int64_t d : size) w.integer(d);
      w.tuple_from_mark();
      w.mark();
      int64_t stride = 1;
      std::vector<int64_t> strides(size.size());
      for (size_t d = size.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= size[d];
      }
      for (int64_t st : strides) w.integer(st);
      w.tuple_from_mark();
      w.boolean(false);
      w.global("collections", "OrderedDict");
      w.empty_tuple();
      w.reduce();
      w.tuple_from_mark();
      w.reduce();
    }
    w.setitems_from_mark();
  }
  return w.finish();
}

void check_spec(const TorchTensorSpec& s) {
  SEGMUX_CHECK(!s.name.empty(), "checkpoint writer: empty tensor name");
  if (s.complex)
    SEGMUX_CHECK((s.dtype == DType::f32 || s.dtype == DType::f64) && !s.shape.empty() && s.shape.back() == 2,
                 "checkpoint writer: complex tensor '", s.name, "' must be f32/f64 with a trailing dimension 2, got ",
                 dtype_name(s.dtype), " ", shape_str(s.shape));
  storage_name_for(s.dtype, s.complex);
}

}  // namespace

void write_stored_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries,
                      bool deflate) {
  ZipWriter zip(path);
  for (auto& [name, data] : entries) zip.add(name, data.data(), data.size(), deflate);
  zip.finish();
}

void write_pytorch_checkpoint_streaming(const std::string& path, const std::vector<TorchTensorSpec>& specs,
                                        const std::function<Tensor(size_t index)>& produce,
                                        const std::string& archive_name) {
  check_archive_name(archive_name);
  for (auto& s : specs) check_spec(s);
  const std::string prefix = archive_name + "/";
  ZipWriter zip(path);
  const std::string pkl = state_dict_pickle(specs);
  zip.add(prefix + "data.pkl", pkl.data(), pkl.size());
  zip.add(prefix + "byteorder", "little", 6);
  for (size_t i = 0; i < specs.size(); ++i) {
    Tensor t = produce(i);
    SEGMUX_CHECK(t.dtype() == specs[i].dtype && t.shape() == specs[i].shape, "checkpoint writer: tensor '",
                 specs[i].name, "' is ", dtype_name(t.dtype()), " ", shape_str(t.shape()), " but was declared ",
                 dtype_name(specs[i].dtype), " ", shape_str(specs[i].shape));
    zip.add(prefix + "data/" + std::to_string(i), t.raw(), t.nbytes());
  }
  zip.add(prefix + "version", "3\n", 2);
  zip.finish();
}

void write_pytorch_checkpoint(const std::string& path, const std::vector<TorchTensor>& tensors,
                              const std::string& archive_name) {
  std::vector<TorchTensorSpec> specs;
  for (auto& t : tensors) specs.push_back(TorchTensorSpec{t.name, t.tensor.dtype(), t.tensor.shape(), t.complex});
  write_pytorch_checkpoint_streaming(
      path, specs, [&](size_t i) { return tensors[i].tensor; }, archive_name);
}

}  // namespace segmux
