// Recognizes what a file is from its first bytes, so a reader given the wrong kind of file can say
// what it got and which reader fits ("is a PyTorch checkpoint (zip archive), not a safetensors file")
// instead of a misleading parse error.
#pragma once
#include <cstddef>
#include <string>

namespace segmux {

enum class FileKind { empty, safetensors, pytorch_zip, raw_pickle, npy, gzip, json, png, gif, smx, unknown };

FileKind sniff_file_kind(const std::byte* data, size_t size);

// "a PyTorch checkpoint (zip archive; weights options such as --weights read it)", ... ; for unknown
// kinds a description of the first bytes ("a file starting with 0x12 0x34 ...").
std::string describe_file_kind(const std::byte* data, size_t size);

}  // namespace segmux
