// The offline model file (.smx): one compiled model in one file. Layout: docs/offline-format.md.
//
// Writing is atomic. Loading maps the file read-only; weights are views into the mapping (never
// copied). Every section carries an XXH3-64 checksum verified at load; truncation, a corrupted byte,
// a wrong magic, format version or target ISA are clear segmux::Errors, never crashes.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"

namespace segmux {

constexpr uint32_t kOfflineFormatVersion = 1;
constexpr size_t kWeightsAlignment = 4096;  // the weights section starts on a page boundary
constexpr size_t kTensorAlignment = 64;     // each weight inside it is 64-byte aligned

// Section kinds, in file order.
enum class SectionKind : uint32_t { meta = 1, graph = 2, plan = 3, weights = 4, prepacked = 5 };

// The instruction set a compiled model targets: "generic" or "x86-64-avx512".
std::string host_isa();                          // from the kernels' dispatcher (kernels/isa.h)
bool host_supports_isa(const std::string& isa);  // "generic" always; unknown names: false

// A prepacked weight blob some kernel produced for one ISA (keyed by node index and a kernel key).
struct PrepackedBlob {
  int node = -1;
  std::string key;
  Tensor data;  // u8 view into the file
};

struct OfflineModel {
  ir::Graph graph;  // final graph; initializers alias the file mapping
  MemoryPlan plan;
  std::string target_isa;
  std::string producer;  // e.g. "segmux 0.1.0"
  uint32_t format_version = 0;
  std::string meta_json;                 // the META section as written (signature, options, stats)
  std::string prepacked_isa;             // ISA the prepacked blobs were made for ("" when none)
  std::vector<PrepackedBlob> prepacked;  // empty when the ISA differs from the host (kernels repack)
  size_t file_bytes = 0;
  size_t weights_bytes = 0;
};

struct WriteOptions {
  std::string target_isa = "generic";
  std::string meta_json = "{}";  // extra META fields (a JSON object): options, command line, stats
  std::string prepacked_isa;
  std::vector<std::pair<int, std::pair<std::string, Tensor>>> prepacked;  // node -> (key, bytes)
};

// Serialises graph + plan (+ prepacked blobs) into the .smx byte layout.
std::string serialize_offline_model(const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt);
void write_offline_model(const std::string& path, const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt);

struct LoadOptions {
  bool verify_checksums = true;  // header, section table and every section, the weights included
  bool check_isa = true;         // refuse a model whose target ISA this machine lacks
  // With verify_checksums: false leaves the weights and prepacked sections unhashed (the small ones
  // still are). load_offline_model_file sets it for a file a memo says was verified (below).
  bool verify_weights = true;
  // A folder of memos of files verified in full (runtime/verified_memo.h): a file verified before, and
  // not changed since, opens without hashing its weights; "" verifies every section every time.
  std::string verified_memo_dir;
};

// Parses a mapped file (or any bytes). `what` names the source in errors.
OfflineModel load_offline_model(std::shared_ptr<Storage> bytes, const std::string& what, const LoadOptions& opt = {});
OfflineModel load_offline_model_file(const std::string& path, const LoadOptions& opt = {});

// detect_model_format without errors: false for anything that is not a readable .smx file.
bool is_offline_model_file(const std::string& path);

// How a model file is read, decided by its first bytes, not its name: the .smx magic (or a prefix of it)
// means .smx, anything else ONNX. Errors: a file that cannot be opened or is not a regular file, an
// empty file, and a file named *.smx without the magic ("not a segmux offline model (.smx)").
enum class ModelFormat { smx, onnx };
ModelFormat detect_model_format(const std::string& path);

// A compiled model ready to run: the mapped offline model and an executor over it. This is all a
// deployment needs: neither the compiler nor ONNX is linked to run a .smx.
struct LoadedModel {
  OfflineModel model;
  std::unique_ptr<Executor> executor;
};
LoadedModel load_compiled(const std::string& path, const ExecutorOptions& exec = {}, const LoadOptions& load = {});

}  // namespace segmux
