// PyTorch checkpoints (torch.save's zip format) read without Python and without executing pickle code,
// and written in the same format.
//
// Layout: a ZIP archive (entries normally stored, 64-byte aligned) with one top folder <name>/:
//   <name>/data.pkl      pickled object: a dict / OrderedDict of tensors (optionally nested, e.g. {"model": {...}})
//   <name>/data/<key>    raw little-endian bytes of storage <key>
//   <name>/version       format version ("3")
// Tensors are `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)` with the storage
// given by the persistent id ('storage', torch.<Type>Storage, key, location, numel).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace segmux {

// ---- ZIP (read-only, over a mapped file) ----

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint32_t crc32 = 0;
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;  // where the (compressed) bytes start in the file
};

class ZipReader {
 public:
  // Parses the central directory (ZIP64 too). Every entry's bytes are checked to lie inside the file.
  ZipReader(std::shared_ptr<Storage> file, std::string what);
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // The entry's uncompressed bytes: a zero-copy view of the mapping when stored, an inflated copy
  // when deflated (checked against its CRC-32 and size).
  std::shared_ptr<Storage> read(const ZipEntry& e) const;
  const std::string& what() const { return what_; }

 private:
  std::shared_ptr<Storage> file_;
  std::string what_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t> by_name_;
};

bool looks_like_zip(const Storage& bytes);  // starts with a local-file-header signature "PK\3\4"

// Writes a zip of stored (uncompressed) entries, data 64-byte aligned, atomically. The checkpoint
// writer uses the same code; tests use it to build hostile archives (and, with `deflate`, archives of
// deflated entries, which the reader inflates).
void write_stored_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries,
                      bool deflate = false);

// ---- PyTorch checkpoint ----

struct TorchTensor {
  std::string name;
  Tensor tensor;         // complex64 comes back as f32 with a trailing dimension 2 (real, imag)
  bool complex = false;  // stored as complex64 (ComplexFloatStorage) in the checkpoint
};

struct TorchCheckpoint {
  std::vector<TorchTensor> tensors;  // in pickle (= state_dict) order, keys as in the file
  std::string archive_name;          // the zip's top folder
  size_t zero_copy_tensors = 0;      // how many alias the file mapping
  size_t copied_tensors = 0;         // non-contiguous, misaligned or deflated: copied
};

// Reads a torch.save zip checkpoint. The pickle may be a dict of tensors or hold one under a top-level
// key `unwrap_key` (e.g. "model"), as the official loader accepts. Anything else -> segmux::Error.
TorchCheckpoint read_pytorch_checkpoint(const std::string& path, const std::string& unwrap_key = "model");
TorchCheckpoint parse_pytorch_checkpoint(std::shared_ptr<Storage> file, const std::string& what,
                                         const std::string& unwrap_key = "model");

// Writes tensors as a torch.save-compatible zip (stored entries, 64-byte aligned data, protocol-2
// pickle of an OrderedDict of _rebuild_tensor_v2), atomically (temporary file + rename).
void write_pytorch_checkpoint(const std::string& path, const std::vector<TorchTensor>& tensors,
                              const std::string& archive_name = "archive");

// Streaming variant for checkpoints larger than memory: `specs` give names, dtypes and shapes (for
// complex entries: f32 with the trailing 2), `produce(i)` returns tensor i just before it is written.
struct TorchTensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  bool complex = false;
};
void write_pytorch_checkpoint_streaming(const std::string& path, const std::vector<TorchTensorSpec>& specs,
                                        const std::function<Tensor(size_t index)>& produce,
                                        const std::string& archive_name = "archive");

}  // namespace segmux
