// The .smx reader: maps a file, checks it (offline_verify.h) and rebuilds the graph, plan and prepacked
// blobs from it; the weights stay views into the mapping.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/files.h"
#include "kernels/isa.h"
#include "runtime/offline_format.h"
#include "runtime/offline_model.h"
#include "runtime/offline_verify.h"
#include "runtime/verified_memo.h"

namespace segmux {

namespace {

using namespace offline_format;

// META: the target ISA, refused when this machine lacks it (opt.check_isa).
void read_meta(const std::byte* base, const SectionEntry& me, const std::string& what, const LoadOptions& opt,
               OfflineModel& m) {
  json meta = parse_meta(base + me.offset, me.size, what + " meta section");
  m.meta_json.assign(reinterpret_cast<const char*>(base + me.offset), me.size);
  m.target_isa = meta.value("target_isa", std::string());
  SEGMUX_CHECK(!m.target_isa.empty(), what, ": meta section names no target ISA");
  if (opt.check_isa)
    SEGMUX_CHECK(host_supports_isa(m.target_isa), what, " was compiled for ISA '", m.target_isa,
                 "', this machine supports '", host_isa(), "' (kernel level ", isa_name(active_isa()),
                 "; recompile with --target generic)");
}

// GRAPH: values, nodes, inputs, outputs, metadata; initializers become views of the weights section
// `we` of `storage`.
void read_graph(const std::shared_ptr<Storage>& storage, const SectionEntry& ge, const SectionEntry& we,
                const std::string& what, ir::Graph& g) {
  const std::byte* base = storage->data;
  json gj = parse_cbor(base + ge.offset, ge.size, what + " graph section");
  g.name = gj.at("name").get<std::string>();
  const json& values = gj.at("values");
  SEGMUX_CHECK(values.is_array(), what, ": graph values are not a list");
  for (const json& v : values) {
    ir::Value val;
    val.name = v.at("n").get<std::string>();
    val.dtype = parse_dtype(v.at("d"), what);
    if (!v.at("s").is_null()) {
      val.shape = v.at("s").get<Shape>();
      val.has_shape = true;
      bool is_static = true;
      for (int64_t d : val.shape) is_static = is_static && d >= 0;
      for (int64_t d : val.shape)
        SEGMUX_CHECK(d >= -1 && d <= kMaxDim, what, ": value '", val.name, "' has bad dimension ", d);
      if (is_static) checked_numel(val.shape, what + " value '" + val.name + "'");
    }
    g.values.push_back(std::move(val));
  }
  const int nv = int(g.values.size());
  auto check_id = [&](int id, bool allow_missing, const std::string& where) {
    SEGMUX_CHECK((allow_missing && id == -1) || (id >= 0 && id < nv), what, ": ", where, " refers to value id ", id,
                 " of ", nv);
    return id;
  };
  for (const json& nj : gj.at("nodes")) {
    ir::Node n;
    n.op_type = nj.at("op").get<std::string>();
    n.domain = nj.at("domain").get<std::string>();
    n.name = nj.at("name").get<std::string>();
    for (int id : nj.at("in").get<std::vector<int>>()) n.inputs.push_back(check_id(id, true, n.describe()));
    for (int id : nj.at("out").get<std::vector<int>>()) n.outputs.push_back(check_id(id, true, n.describe()));
    for (auto& [k, a] : nj.at("attrs").items()) n.attrs[k] = parse_attr(a, n.describe() + " attribute '" + k + "'");
    g.nodes.push_back(std::move(n));
  }
  for (int id : gj.at("inputs").get<std::vector<int>>()) g.inputs.push_back(check_id(id, false, "graph input"));
  for (int id : gj.at("outputs").get<std::vector<int>>()) g.outputs.push_back(check_id(id, false, "graph output"));
  g.metadata = gj.at("metadata").get<std::map<std::string, std::string>>();
  auto storage_keep = storage;
  for (const json& ij : gj.at("initializers")) {
    SEGMUX_CHECK(ij.is_array() && ij.size() == 3, what, ": malformed initializer entry");
    int id = check_id(ij[0].get<int>(), false, "initializer");
    uint64_t off = ij[1].get<uint64_t>(), nb = ij[2].get<uint64_t>();
    ir::Value& val = g.values[size_t(id)];
    SEGMUX_CHECK(val.has_shape, what, ": weight '", val.name, "' has no shape");
    int64_t n = checked_numel(val.shape, what + " weight '" + val.name + "'");
    SEGMUX_CHECK(nb == uint64_t(n) * dtype_size(val.dtype), what, ": weight '", val.name, "' holds ", nb, " bytes for ",
                 dtype_name(val.dtype), " ", shape_str(val.shape));
    SEGMUX_CHECK(off % kTensorAlignment == 0 && off <= we.size && nb <= we.size - off, what, ": weight '", val.name,
                 "' lies outside the weights section");
    SEGMUX_CHECK(!g.is_initializer(id), what, ": weight '", val.name, "' is listed twice");
    g.initializers.emplace(id, Tensor(val.dtype, val.shape, storage_keep, we.offset + size_t(off)));
  }
}

// PLAN: the memory plan, checked against the graph.
void read_plan(const std::byte* base, const SectionEntry& pe, const std::string& what, const ir::Graph& g,
               MemoryPlan& plan) {
  json pj = parse_cbor(base + pe.offset, pe.size, what + " plan section");
  plan.arena_bytes = pj.at("arena_bytes").get<size_t>();
  plan.sum_tensor_bytes = pj.at("sum_tensor_bytes").get<size_t>();
  plan.alignment = pj.at("alignment").get<size_t>();
  plan.offsets = pj.at("offsets").get<std::vector<int64_t>>();
  plan.view_nodes.assign(g.nodes.size(), 0);
  for (int n : pj.at("views").get<std::vector<int>>()) {
    SEGMUX_CHECK(n >= 0 && size_t(n) < g.nodes.size(), what, ": plan names view node ", n, " of ", g.nodes.size());
    plan.view_nodes[size_t(n)] = 1;
  }
  SEGMUX_CHECK(plan.arena_bytes <= plan.sum_tensor_bytes, what, ": plan arena (", plan.arena_bytes,
               " bytes) exceeds the sum of its tensors (", plan.sum_tensor_bytes, ")");
  validate_plan(g, plan);
}

// PREPACKED: the blobs made for this host's ISA (others are ignored: kernels repack from the weights).
void read_prepacked(const std::shared_ptr<Storage>& storage, const SectionEntry& xe, const std::string& what,
                    OfflineModel& m) {
  const std::byte* base = storage->data;
  SEGMUX_CHECK(xe.size >= 8, what, ": prepacked section is truncated");
  uint64_t index_len = get<uint64_t>(base + xe.offset);
  SEGMUX_CHECK(index_len <= xe.size - 8, what, ": prepacked index overruns its section");
  json idx = parse_cbor(base + xe.offset + 8, size_t(index_len), what + " prepacked index");
  size_t blob_base = round_up(8 + size_t(index_len), kTensorAlignment);
  SEGMUX_CHECK(blob_base <= xe.size, what, ": prepacked section is truncated");
  m.prepacked_isa = idx.at("isa").get<std::string>();
  for (const json& b : idx.at("blobs")) {
    PrepackedBlob blob;
    blob.node = b.at("node").get<int>();
    blob.key = b.at("key").get<std::string>();
    uint64_t off = b.at("offset").get<uint64_t>(), len = b.at("size").get<uint64_t>();
    SEGMUX_CHECK(blob.node >= 0 && size_t(blob.node) < m.graph.nodes.size(), what, ": prepacked blob for node ",
                 blob.node, " of ", m.graph.nodes.size());
    SEGMUX_CHECK(off <= xe.size - blob_base && len <= xe.size - blob_base - off, what, ": prepacked blob '", blob.key,
                 "' lies outside its section");
    if (m.prepacked_isa == host_isa())
      blob.data = Tensor(DType::u8, {int64_t(len)}, storage, xe.offset + blob_base + size_t(off));
    if (blob.data.defined()) m.prepacked.push_back(std::move(blob));
  }
}

}  // namespace

// The kernels' dispatcher decides (CPUID, the OS's saved register state, SEGMUX_ISA), so a model is
// refused exactly when the kernels would not run their AVX-512 code. Its AVX2 level has no model key:
// nothing in a file is AVX2-specific, such a machine compiles and loads "generic" models.
std::string host_isa() { return active_isa() == Isa::avx512 ? "x86-64-avx512" : "generic"; }

bool host_supports_isa(const std::string& isa) {
  if (isa == "generic") return true;
  if (isa == "x86-64-avx512") return host_isa() == "x86-64-avx512";
  return false;
}

ModelFormat detect_model_format(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO must not block here
  SEGMUX_CHECK(fd >= 0, "cannot open model '", path, "': ", std::strerror(errno));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  char b[8] = {};
  ssize_t n = regular ? ::read(fd, b, 8) : 0;
  int err = errno;
  ::close(fd);
  SEGMUX_CHECK(regular, "model '", path, "' is not a regular file");
  SEGMUX_CHECK(n >= 0, "cannot read model '", path, "': ", std::strerror(err));
  const bool named_smx = path.size() >= 4 && path.compare(path.size() - 4, 4, ".smx") == 0;
  if (n == 0)
    fail("model '", path, "' is empty: not a segmux offline model (.smx)", named_smx ? "" : " nor an ONNX model");
  // Any prefix of the magic is a (truncated) .smx file: the loader says so.
  if (std::memcmp(b, kMagic, size_t(n)) == 0) return ModelFormat::smx;
  SEGMUX_CHECK(!named_smx, "model '", path,
               "' is not a segmux offline model (.smx): it does not start with the .smx magic bytes");
  return ModelFormat::onnx;
}

bool is_offline_model_file(const std::string& path) {
  try {
    return detect_model_format(path) == ModelFormat::smx;
  } catch (const Error&) {
    return false;
  }
}

OfflineModel load_offline_model_file(const std::string& path, const LoadOptions& opt) {
  if (!opt.verify_checksums || opt.verified_memo_dir.empty())
    return load_offline_model(map_file(path), "'" + path + "'", opt);
  const std::string memo = verified_memo_path(path, opt.verified_memo_dir);
  const bool verified_before = !memo.empty() && std::filesystem::exists(memo);
  LoadOptions o = opt;
  o.verify_weights = !verified_before;
  OfflineModel m = load_offline_model(map_file(path), "'" + path + "'", o);
  // Only when the file is still the one that was hashed (not replaced while it was read).
  if (!verified_before && !memo.empty() && verified_memo_path(path, opt.verified_memo_dir) == memo)
    write_verified_memo(memo, path);
  return m;
}

OfflineModel load_offline_model(std::shared_ptr<Storage> storage, const std::string& what, const LoadOptions& opt) {
  SEGMUX_CHECK(storage != nullptr, what, ": no data");
  const std::byte* base = storage->data;
  const Layout layout = verify_layout(base, storage->nbytes, what, opt);
  const std::vector<SectionEntry>& entries = layout.sections;
  OfflineModel m;
  m.format_version = layout.format_version;
  m.producer = layout.producer;
  m.file_bytes = storage->nbytes;
  try {
    read_meta(base, entries[0], what, opt, m);
    m.weights_bytes = entries[3].size;
    read_graph(storage, entries[1], entries[3], what, m.graph);
    verify_recorded_shapes(m.graph, what);
    read_plan(base, entries[2], what, m.graph, m.plan);
    if (entries.size() > 4) read_prepacked(storage, entries[4], what, m);
  } catch (const json::exception& e) {
    fail(what, ": malformed section: ", e.what());
  }
  return m;
}

LoadedModel load_compiled(const std::string& path, const ExecutorOptions& exec, const LoadOptions& load) {
  LoadedModel m;
  m.model = load_offline_model_file(path, load);
  m.executor = std::make_unique<Executor>(m.model.graph, m.model.plan, exec);
  return m;
}

}  // namespace segmux
