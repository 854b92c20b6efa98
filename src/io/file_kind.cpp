#include "io/file_kind.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace segmux {

namespace {

bool starts_with(const std::byte* data, size_t size, const char* magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

}  // namespace

FileKind sniff_file_kind(const std::byte* data, size_t size) {
  if (size == 0) return FileKind::empty;
  // First: a safetensors header length can look like another format's magic (0x80 0x02 ...).
  if (size >= 9) {
    uint64_t header_len;
    std::memcpy(&header_len, data, 8);
    if (header_len <= size - 8 && char(data[8]) == '{') return FileKind::safetensors;
  }
  if (starts_with(data, size, "PK\x03\x04", 4)) return FileKind::pytorch_zip;
  if (starts_with(data, size, "\x93NUMPY", 6)) return FileKind::npy;
  if (starts_with(data, size, "\x1f\x8b", 2)) return FileKind::gzip;
  if (starts_with(data, size, "\x89PNG", 4)) return FileKind::png;
  if (starts_with(data, size, "GIF8", 4)) return FileKind::gif;
  if (starts_with(data, size, "SEGMUXMD", 8)) return FileKind::smx;
  if (size >= 2 && uint8_t(data[0]) == 0x80 && uint8_t(data[1]) <= 5) return FileKind::raw_pickle;
  for (size_t i = 0; i < size && i < 64; ++i) {
    const char c = char(data[i]);
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '{' || c == '[') return FileKind::json;
    break;
  }
  return FileKind::unknown;
}

std::string describe_file_kind(const std::byte* data, size_t size) {
  switch (sniff_file_kind(data, size)) {
    case FileKind::empty:
      return "an empty file";
    case FileKind::safetensors:
      return "a safetensors file (tensor inputs and --weights read those)";
    case FileKind::pytorch_zip:
      return "a zip archive, as PyTorch .pt/.pth checkpoints are (weights options such as --weights and "
             "check-weights read those; tensor inputs must be .safetensors or .npy)";
    case FileKind::raw_pickle:
      return "a raw pickle, as legacy (non-zip) torch.save files are (not supported: re-save it with "
             "torch.save from PyTorch 1.6 or later, or as .safetensors)";
    case FileKind::npy:
      return "a NumPy .npy array (give it a .npy name where tensor inputs are read)";
    case FileKind::gzip:
      return "a gzip file";
    case FileKind::json:
      return "JSON text";
    case FileKind::png:
      return "a PNG image";
    case FileKind::gif:
      return "a GIF image";
    case FileKind::smx:
      return "a compiled segmux model (.smx)";
    case FileKind::unknown:
      break;
  }
  std::string out = "a file of " + std::to_string(size) + (size == 1 ? " byte" : " bytes") + " starting with";
  for (size_t i = 0; i < size && i < 8; ++i) {
    char buf[8];
    std::snprintf(buf, sizeof buf, " %02X", unsigned(uint8_t(data[i])));
    out += buf;
  }
  return out;
}

}  // namespace segmux
