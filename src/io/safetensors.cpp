#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "io/alloc_guard.h"
#include "io/file_kind.h"
#include "io/json_limits.h"
#include "io/printable.h"

namespace segmux {

const Tensor& TensorFile::at(const std::string& name) const {
  auto it = tensors.find(name);
  SEGMUX_CHECK(it != tensors.end(), "tensor '", printable(name), "' not found");
  return it->second;
}

namespace {

bool st_dtype(const std::string& s, DType* out) {
  static const std::pair<const char*, DType> table[] = {
      {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64},     {"I64", DType::i64},
      {"I32", DType::i32}, {"I8", DType::i8},   {"U8", DType::u8},     {"BOOL", DType::boolean}};
  for (auto& [name, t] : table)
    if (s == name) {
      *out = t;
      return true;
    }
  return false;
}

const char* st_name(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::f64:
      return "F64";
    case DType::i64:
      return "I64";
    case DType::i32:
      return "I32";
    case DType::i8:
      return "I8";
    case DType::u8:
      return "U8";
    case DType::boolean:
      return "BOOL";
  }
  return "?";
}

}  // namespace

namespace {

// A byte count computed in long double (it may exceed 64 bits): converted to an integer only when it
// fits (out of range, the conversion gave 0 and the message said "needs 0 bytes").
std::string byte_count_text(long double n) {
  if (n < 18446744073709551616.0L) return std::to_string((unsigned long long)n);
  return "more than 18446744073709551615";
}

struct DataSpan {
  uint64_t begin, end;
  std::string name;
};

// JSON objects are unordered; file order = order of data offsets. Two tensors sharing bytes would
// silently alias each other (a write through one changes the other): such a file is refused.
void order_and_check_overlaps(TensorFile& out, std::vector<DataSpan>& spans, const std::string& what) {
  std::sort(spans.begin(), spans.end(),
            [](const DataSpan& a, const DataSpan& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  const DataSpan* last = nullptr;  // the non-empty span reaching furthest so far
  for (const DataSpan& s : spans) {
    if (s.begin == s.end) continue;  // an empty tensor holds no bytes
    SEGMUX_CHECK(!last || s.begin >= last->end, what, ": tensors '", printable(last ? last->name : ""), "' [",
                 last ? last->begin : 0, ",", last ? last->end : 0, ") and '", printable(s.name), "' [", s.begin, ",",
                 s.end, ") overlap in the data section");
    last = &s;
  }
  for (DataSpan& s : spans) out.names.push_back(std::move(s.name));
}

TensorFile parse_safetensors_unguarded(std::shared_ptr<Storage> bytes, const std::string& what) {
  // Another kind of file (a .pt checkpoint, an .npy array, ...) is named as such, with the reader to use.
  const FileKind kind = sniff_file_kind(bytes->data, bytes->nbytes);
  SEGMUX_CHECK(kind == FileKind::safetensors || kind == FileKind::unknown, what, ": not a safetensors file: it is ",
               describe_file_kind(bytes->data, bytes->nbytes));
  // A tiny file of another kind (a 1-byte ".pt") is named for what it is and what would be accepted.
  SEGMUX_CHECK(bytes->nbytes >= 8, what, " is ", describe_file_kind(bytes->data, bytes->nbytes),
               ": too short to be a safetensors file (at least 8 bytes) or a PyTorch .pt checkpoint (a zip archive)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes->data, 8);
  SEGMUX_CHECK(header_len <= bytes->nbytes - 8, what, ": not a safetensors file, or truncated: its header length ",
               header_len, " runs past the end of the file (", bytes->nbytes, " bytes; it is ",
               describe_file_kind(bytes->data, bytes->nbytes), ")");
  // Nesting is bounded while parsing: a deep __metadata__ value would otherwise be serialized
  // recursively below. The size limit is the one of the reference implementation (100 MB).
  const nlohmann::json header =
      parse_untrusted_json(std::string_view(reinterpret_cast<const char*>(bytes->data) + 8, size_t(header_len)),
                           what + " (safetensors header)", JsonLimits{.max_depth = 16, .max_bytes = 100000000});
  SEGMUX_CHECK(header.is_object(), what, ": header is not a JSON object");
  const size_t data_start = 8 + header_len;
  const size_t data_len = bytes->nbytes - data_start;
  TensorFile out;
  std::vector<DataSpan> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      SEGMUX_CHECK(it->is_object(), what, ": __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m)
        out.metadata[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
      continue;
    }
    const std::string& key = it.key();
    const std::string name = printable(key);  // for messages
    const auto& e = *it;
    SEGMUX_CHECK(e.is_object() && e.contains("dtype") && e.contains("shape") && e.contains("data_offsets"), what,
                 ": entry '", name, "' lacks dtype/shape/data_offsets");
    DType dt;
    SEGMUX_CHECK(e["dtype"].is_string() && st_dtype(e["dtype"].get<std::string>(), &dt), what, ": tensor '", name,
                 "' has unsupported dtype ", describe_json(e["dtype"]));
    Shape shape;
    SEGMUX_CHECK(e["shape"].is_array(), what, ": tensor '", name, "' shape is not a list");
    for (auto& d : e["shape"]) {
      SEGMUX_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0 && d.get<int64_t>() < (int64_t(1) << 40), what,
                   ": tensor '", name, "' has a bad dimension ", describe_json(d));
      shape.push_back(d.get<int64_t>());
    }
    const auto& off = e["data_offsets"];
    SEGMUX_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(), what,
                 ": tensor '", name, "' data_offsets must be two unsigned integers");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    SEGMUX_CHECK(begin <= end && end <= data_len, what, ": tensor '", name, "' data [", begin, ",", end,
                 ") lies outside the ", data_len, "-byte data section");
    // Guard the product against overflow before trusting it.
    long double elems = 1;
    for (int64_t d : shape) elems *= (long double)d;
    const long double needed = elems * dtype_size(dt);
    SEGMUX_CHECK(needed == (long double)(end - begin), what, ": tensor '", name, "' shape ", shape_str(shape), " ",
                 st_name(dt), " needs ", byte_count_text(needed), " bytes but has ", end - begin);
    spans.push_back({begin, end, key});
    Tensor view(dt, shape, bytes, data_start + begin);
    // The format does not align tensor data; typed access needs natural alignment (UB otherwise), so a
    // misaligned tensor is copied into aligned memory; aligned ones (the common case) stay zero-copy.
    if (reinterpret_cast<uintptr_t>(view.raw()) % dtype_size(dt) != 0) view = view.clone();
    out.tensors.emplace(key, std::move(view));
  }
  order_and_check_overlaps(out, spans, what);
  return out;
}

}  // namespace

TensorFile parse_safetensors(std::shared_ptr<Storage> bytes, const std::string& what) {
  return guard_allocation(what, [&] { return parse_safetensors_unguarded(std::move(bytes), printable(what)); });
}

TensorFile read_safetensors(const std::string& path) { return parse_safetensors(map_file(path), path); }

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  size_t offset = 0;
  for (auto& [name, t] : tensors) {
    SEGMUX_CHECK(!header.contains(name), "write_safetensors: duplicate tensor name '", name, "'");
    header[name] = {
        {"dtype", st_name(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8) h.push_back(' ');
  std::vector<std::byte> buf(8 + h.size() + offset);
  uint64_t hl = h.size();
  std::memcpy(buf.data(), &hl, 8);
  std::memcpy(buf.data() + 8, h.data(), h.size());
  size_t pos = 8 + h.size();
  for (auto& [name, t] : tensors) {
    if (t.nbytes()) std::memcpy(buf.data() + pos, t.raw(), t.nbytes());
    pos += t.nbytes();
  }
  write_file_atomic(path, buf.data(), buf.size());
}

}  // namespace segmux
