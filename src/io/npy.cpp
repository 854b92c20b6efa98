#include "io/npy.h"

#include <cstring>

#include "io/alloc_guard.h"
#include "io/file_kind.h"
#include "io/printable.h"
#include "io/safetensors.h"

namespace segmux {

namespace {

const char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

struct DescrMap {
  const char* descr;
  DType dtype;
};
const DescrMap kDescrs[] = {{"<f4", DType::f32}, {"<f8", DType::f64}, {"<f2", DType::f16},    {"<i8", DType::i64},
                            {"<i4", DType::i32}, {"|i1", DType::i8},  {"|u1", DType::u8},     {"|b1", DType::boolean},
                            {"<u1", DType::u8},  {"<i1", DType::i8},  {"<b1", DType::boolean}};

// Finds the value text after 'key': in the header dict.
std::string dict_value(const std::string& header, const std::string& key, const std::string& what) {
  std::string pattern = "'" + key + "'";
  size_t p = header.find(pattern);
  SEGMUX_CHECK(p != std::string::npos, what, ": .npy header has no '", key, "' entry");
  p = header.find(':', p + pattern.size());
  SEGMUX_CHECK(p != std::string::npos, what, ": .npy header entry '", key, "' has no value");
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  SEGMUX_CHECK(p < header.size(), what, ": .npy header is cut short");
  size_t end;
  if (header[p] == '\'') {
    end = header.find('\'', p + 1);
    SEGMUX_CHECK(end != std::string::npos, what, ": .npy header has an unterminated string");
    return header.substr(p + 1, end - p - 1);
  }
  if (header[p] == '(') {
    end = header.find(')', p);
    SEGMUX_CHECK(end != std::string::npos, what, ": .npy header has an unterminated shape");
    return header.substr(p, end - p + 1);
  }
  end = header.find_first_of(",}", p);
  SEGMUX_CHECK(end != std::string::npos, what, ": .npy header is cut short");
  std::string v = header.substr(p, end - p);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

Tensor parse_npy_unguarded(const Storage& bytes, const std::string& what) {
  const std::byte* b = bytes.data;
  const size_t n = bytes.nbytes;
  SEGMUX_CHECK(n >= 6 && std::memcmp(b, kMagic, 6) == 0, what, " is not a .npy file (bad magic): it is ",
               describe_file_kind(b, n));
  SEGMUX_CHECK(n >= 10, what, " is truncated: ", n, " bytes, shorter than a .npy header");
  const int major = int(uint8_t(b[6]));
  size_t header_len, pos;
  if (major == 1) {
    header_len = size_t(uint8_t(b[8])) | size_t(uint8_t(b[9])) << 8;
    pos = 10;
  } else if (major == 2 || major == 3) {
    SEGMUX_CHECK(n >= 12, what, ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(b[8 + i])) << (8 * i);
    pos = 12;
  } else {
    fail(what, ": unsupported .npy format version ", major, ".", int(uint8_t(b[7])));
  }
  SEGMUX_CHECK(header_len <= n - pos, what, ": .npy header (", header_len, " bytes) runs past the end of the file");
  std::string header(reinterpret_cast<const char*>(b + pos), header_len);
  pos += header_len;
  std::string descr = dict_value(header, "descr", what);
  std::string fortran = dict_value(header, "fortran_order", what);
  std::string shape_text = dict_value(header, "shape", what);
  SEGMUX_CHECK(fortran == "False", what,
               ": Fortran-order arrays are not supported (save with C order; fortran_order is ", printable(fortran, 40),
               ")");
  DType dtype = DType::f32;
  bool found = false;
  for (auto& d : kDescrs)
    if (descr == d.descr) {
      dtype = d.dtype;
      found = true;
    }
  SEGMUX_CHECK(found, what, ": unsupported .npy dtype '", printable(descr, 40),
               "' (little-endian f4 f8 f2 i8 i4 i1 u1 b1 only)");
  SEGMUX_CHECK(shape_text.size() >= 2 && shape_text.front() == '(' && shape_text.back() == ')', what,
               ": malformed .npy shape ", printable(shape_text, 80));
  Shape shape;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  size_t i = 0;
  int64_t numel = 1;
  while (i < inner.size()) {
    while (i < inner.size() && (inner[i] == ' ' || inner[i] == ',')) ++i;
    if (i >= inner.size()) break;
    SEGMUX_CHECK(inner[i] >= '0' && inner[i] <= '9', what, ": malformed .npy shape ", printable(shape_text, 80));
    int64_t d = 0;
    while (i < inner.size() && inner[i] >= '0' && inner[i] <= '9') {
      SEGMUX_CHECK(d < (int64_t(1) << 48), what, ": .npy dimension too large in ", printable(shape_text, 80));
      d = d * 10 + (inner[i] - '0');
      ++i;
    }
    while (i < inner.size() && (inner[i] == 'L' || inner[i] == ' ')) ++i;
    SEGMUX_CHECK(i >= inner.size() || inner[i] == ',', what, ": malformed .npy shape ", printable(shape_text, 80));
    SEGMUX_CHECK(d == 0 || numel <= (int64_t(1) << 48) / d, what, ": .npy shape ", printable(shape_text, 80),
                 " is too large");
    numel *= d;
    shape.push_back(d);
  }
  size_t data_bytes = size_t(numel) * dtype_size(dtype);
  SEGMUX_CHECK(n - pos >= data_bytes, what, " is truncated: ", n - pos, " data bytes for ", dtype_name(dtype), " ",
               shape_str(shape), " (", data_bytes, " needed)");
  SEGMUX_CHECK(n - pos == data_bytes, what, " has ", n - pos - data_bytes, " bytes after its data");
  Tensor t(dtype, shape);
  if (data_bytes) std::memcpy(t.raw(), b + pos, data_bytes);
  if (dtype == DType::boolean) {
    uint8_t* p = static_cast<uint8_t*>(t.raw());
    for (int64_t k = 0; k < numel; ++k) p[k] = p[k] ? 1 : 0;
  }
  return t;
}

}  // namespace

Tensor parse_npy(std::shared_ptr<Storage> bytes, const std::string& what) {
  return guard_allocation(what, [&] { return parse_npy_unguarded(*bytes, printable(what)); });
}

Tensor read_npy(const std::string& path) { return parse_npy(map_file(path), "'" + path + "'"); }

std::string npy_bytes(const Tensor& t) {
  const char* descr = nullptr;
  for (auto& d : kDescrs)
    if (d.dtype == t.dtype()) {
      descr = d.descr;
      break;
    }
  SEGMUX_CHECK(descr != nullptr, "cannot write ", dtype_name(t.dtype()),
               " to .npy (NumPy has no such dtype; cast to f32)");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += std::to_string(t.shape()[i]) + (t.rank() == 1 ? "," : i + 1 < t.shape().size() ? ", " : "");
  shape += ")";
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so magic + length field + header + '\n' is a multiple of 64.
  size_t prefix = dict.size() + 1 + 10 <= 65535 + 10 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  size_t hl = dict.size();
  if (prefix == 10) {
    out += char(1);
    out += char(0);
    out += char(hl & 0xff);
    out += char((hl >> 8) & 0xff);
  } else {
    out += char(2);
    out += char(0);
    for (int i = 0; i < 4; ++i) out += char((hl >> (8 * i)) & 0xff);
  }
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string bytes = npy_bytes(t);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace segmux
