#include "runtime/offline_model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/mapped_pages.h"
#include "io/files.h"
#include "io/json_limits.h"
#include "kernels/isa.h"
#include "runtime/verified_memo.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace segmux {

namespace {

using json = nlohmann::json;

constexpr char kMagic[8] = {'S', 'E', 'G', 'M', 'U', 'X', 'M', 'D'};
constexpr size_t kHeaderBytes = 64;
constexpr size_t kEntryBytes = 32;
constexpr uint32_t kMaxSections = 16;
constexpr size_t kProducerBytes = 24;
constexpr const char* kProducer = "segmux " SEGMUX_VERSION;  // project(VERSION) in CMakeLists.txt
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 48;
constexpr size_t kMaxMetaBytes = size_t(1) << 20;  // signature, options, stats: a few KB in practice

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}
template <typename T>
T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// CBOR sections: nested at most this deep (a graph needs far less), checked before the DOM exists.
constexpr size_t kMaxCborDepth = 32;

json parse_cbor(const std::byte* p, size_t n, const std::string& what) {
  return parse_untrusted_cbor(p, n, what, {.max_depth = kMaxCborDepth, .max_bytes = n});
}

// The META section (JSON text): bounded in size and depth before parsing, an object.
json parse_meta(const std::byte* p, size_t n, const std::string& what) {
  SEGMUX_CHECK(n <= kMaxMetaBytes, what, " is ", n, " bytes, more than the ", kMaxMetaBytes,
               " a META section may hold");
  JsonLimits limits;
  limits.max_depth = kMaxCborDepth;
  limits.max_bytes = kMaxMetaBytes;
  json j = parse_untrusted_json(std::string_view(reinterpret_cast<const char*>(p), n), what, limits);
  SEGMUX_CHECK(j.is_object(), what, " is not a JSON object");
  return j;
}

// Element count with overflow checks (shapes come from untrusted files).
int64_t checked_numel(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    SEGMUX_CHECK(d >= 0 && d <= kMaxDim, what, ": dimension ", d, " is out of range");
    SEGMUX_CHECK(!__builtin_mul_overflow(n, d, &n) && n <= kMaxElements, what, ": shape ", shape_str(shape),
                 " is too large");
  }
  return n;
}

json shape_json(const ir::Value& v) { return v.has_shape ? json(v.shape) : json(nullptr); }

json tensor_meta(const Tensor& t) { return json{{"dtype", std::string(dtype_name(t.dtype()))}, {"shape", t.shape()}}; }

json attr_json(const ir::AttrValue& a) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return json{{"t", "i"}, {"v", v}};
        else if constexpr (std::is_same_v<T, float>)
          return json{{"t", "f"}, {"v", v}};
        else if constexpr (std::is_same_v<T, std::string>)
          return json{{"t", "s"}, {"v", json::binary_t(std::vector<uint8_t>(v.begin(), v.end()))}};
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return json{{"t", "ints"}, {"v", v}};
        else if constexpr (std::is_same_v<T, std::vector<float>>)
          return json{{"t", "floats"}, {"v", v}};
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          json arr = json::array();
          for (auto& s : v) arr.push_back(json::binary_t(std::vector<uint8_t>(s.begin(), s.end())));
          return json{{"t", "strings"}, {"v", arr}};
        } else {
          const Tensor& t = v;
          const uint8_t* p = static_cast<const uint8_t*>(t.raw());
          json j = tensor_meta(t);
          j["t"] = "tensor";
          j["v"] = json::binary_t(std::vector<uint8_t>(p, p + t.nbytes()));
          return j;
        }
      },
      a);
}

DType parse_dtype(const json& j, const std::string& what) {
  DType d;
  std::string name = j.get<std::string>();
  SEGMUX_CHECK(dtype_from_name(name, &d), what, ": unknown dtype '", name, "'");
  return d;
}

std::string binary_string(const json& j) {
  const auto& b = j.get_binary();
  return std::string(b.begin(), b.end());
}

ir::AttrValue parse_attr(const json& j, const std::string& what) {
  std::string t = j.at("t").get<std::string>();
  const json& v = j.at("v");
  if (t == "i") return v.get<int64_t>();
  if (t == "f") return v.get<float>();
  if (t == "s") return binary_string(v);
  if (t == "ints") return v.get<std::vector<int64_t>>();
  if (t == "floats") return v.get<std::vector<float>>();
  if (t == "strings") {
    std::vector<std::string> out;
    for (auto& s : v) out.push_back(binary_string(s));
    return out;
  }
  if (t == "tensor") {
    DType d = parse_dtype(j.at("dtype"), what);
    Shape shape = j.at("shape").get<Shape>();
    int64_t n = checked_numel(shape, what);
    const auto& bytes = v.get_binary();
    SEGMUX_CHECK(bytes.size() == size_t(n) * dtype_size(d), what, ": tensor attribute holds ", bytes.size(),
                 " bytes for ", dtype_name(d), " ", shape_str(shape));
    Tensor out(d, shape);
    if (!bytes.empty()) std::memcpy(out.raw(), bytes.data(), bytes.size());
    return out;
  }
  fail(what, ": unknown attribute kind '", t, "'");
}

struct WeightEntry {
  int value = -1;
  size_t offset = 0;  // inside the weights section
  size_t nbytes = 0;
};

struct Section {
  SectionKind kind;
  std::string bytes;                 // small sections are materialised
  std::vector<WeightEntry> weights;  // the weights section streams from the graph's tensors
  size_t size = 0;
  size_t offset = 0;
  uint64_t checksum = 0;
};

std::string graph_section(const ir::Graph& g, std::vector<WeightEntry>& weights, size_t& weights_bytes) {
  json j;
  j["name"] = g.name;
  json values = json::array();
  for (const auto& v : g.values)
    values.push_back(json{{"n", v.name}, {"d", std::string(dtype_name(v.dtype))}, {"s", shape_json(v)}});
  j["values"] = std::move(values);
  json nodes = json::array();
  for (const auto& n : g.nodes) {
    json attrs = json::object();
    for (auto& [k, a] : n.attrs) attrs[k] = attr_json(a);
    nodes.push_back(json{{"op", n.op_type},
                         {"domain", n.domain},
                         {"name", n.name},
                         {"in", n.inputs},
                         {"out", n.outputs},
                         {"attrs", attrs}});
  }
  j["nodes"] = std::move(nodes);
  j["inputs"] = g.inputs;
  j["outputs"] = g.outputs;
  j["metadata"] = g.metadata;
  json inits = json::array();
  size_t cursor = 0;
  for (auto& [id, t] : g.initializers) {
    cursor = round_up(cursor, kTensorAlignment);
    weights.push_back(WeightEntry{id, cursor, t.nbytes()});
    inits.push_back(json::array({id, cursor, t.nbytes()}));
    cursor += t.nbytes();
  }
  weights_bytes = cursor;
  j["initializers"] = std::move(inits);
  std::vector<uint8_t> cbor = json::to_cbor(j);
  return std::string(cbor.begin(), cbor.end());
}

std::string plan_section(const MemoryPlan& plan) {
  json j;
  j["arena_bytes"] = plan.arena_bytes;
  j["sum_tensor_bytes"] = plan.sum_tensor_bytes;
  j["alignment"] = plan.alignment;
  j["offsets"] = plan.offsets;
  std::vector<int> views;
  for (size_t n = 0; n < plan.view_nodes.size(); ++n)
    if (plan.view_nodes[n]) views.push_back(int(n));
  j["views"] = views;
  std::vector<uint8_t> cbor = json::to_cbor(j);
  return std::string(cbor.begin(), cbor.end());
}

// Prepacked section: u64 index length, CBOR index {isa, blobs:[{node,key,offset,size}]}, zero padding to
// 64, then the blobs (each 64-byte aligned, offsets relative to the blob area).
std::string prepacked_section(const WriteOptions& opt) {
  json index;
  index["isa"] = opt.prepacked_isa;
  json blobs = json::array();
  size_t cursor = 0;
  for (auto& [node, kb] : opt.prepacked) {
    cursor = round_up(cursor, kTensorAlignment);
    blobs.push_back(json{{"node", node}, {"key", kb.first}, {"offset", cursor}, {"size", kb.second.nbytes()}});
    cursor += kb.second.nbytes();
  }
  index["blobs"] = blobs;
  std::vector<uint8_t> cbor = json::to_cbor(index);
  std::string s;
  put<uint64_t>(s, cbor.size());
  s.append(cbor.begin(), cbor.end());
  s.resize(round_up(s.size(), kTensorAlignment), '\0');
  size_t base = s.size();
  for (auto& [node, kb] : opt.prepacked) {
    s.resize(base + round_up(s.size() - base, kTensorAlignment), '\0');
    s.append(static_cast<const char*>(kb.second.raw()), kb.second.nbytes());
  }
  return s;
}

using SinkFn = std::function<void(const void*, size_t)>;

void emit(const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt, const SinkFn& sink) {
  validate_plan(g, plan);
  // Any name is written (the compile driver restricts it to known ISAs); the loader refuses names the
  // host does not support.
  SEGMUX_CHECK(!opt.target_isa.empty() && opt.target_isa.size() <= 64, "bad target ISA name '", opt.target_isa, "'");
  std::vector<Section> sections;
  size_t weights_bytes = 0;
  std::vector<WeightEntry> weights;
  std::string graph_bytes = graph_section(g, weights, weights_bytes);

  const std::string extra = opt.meta_json.empty() ? "{}" : opt.meta_json;
  json meta = parse_meta(reinterpret_cast<const std::byte*>(extra.data()), extra.size(), "offline model: extra META");
  meta["format_version"] = kOfflineFormatVersion;
  meta["producer"] = kProducer;
  meta["target_isa"] = opt.target_isa;
  json sig_in = json::array(), sig_out = json::array();
  for (int v : g.inputs)
    sig_in.push_back(json{{"name", g.value(v).name},
                          {"dtype", std::string(dtype_name(g.value(v).dtype))},
                          {"shape", shape_json(g.value(v))}});
  for (int v : g.outputs)
    sig_out.push_back(json{{"name", g.value(v).name},
                           {"dtype", std::string(dtype_name(g.value(v).dtype))},
                           {"shape", shape_json(g.value(v))}});
  meta["signature"] = json{{"inputs", sig_in}, {"outputs", sig_out}};
  meta["arena_bytes"] = plan.arena_bytes;
  meta["sum_tensor_bytes"] = plan.sum_tensor_bytes;
  meta["weights_bytes"] = weights_bytes;
  meta["nodes"] = g.nodes.size();

  // Replace: a command line may hold file names that are not UTF-8.
  std::string meta_text = meta.dump(1, ' ', false, json::error_handler_t::replace);
  SEGMUX_CHECK(meta_text.size() <= kMaxMetaBytes, "offline model: META is ", meta_text.size(), " bytes, more than ",
               kMaxMetaBytes);
  sections.push_back(Section{SectionKind::meta, std::move(meta_text), {}, 0, 0, 0});
  sections.push_back(Section{SectionKind::graph, std::move(graph_bytes), {}, 0, 0, 0});
  sections.push_back(Section{SectionKind::plan, plan_section(plan), {}, 0, 0, 0});
  Section w{SectionKind::weights, {}, weights, weights_bytes, 0, 0};
  sections.push_back(std::move(w));
  if (!opt.prepacked.empty()) sections.push_back(Section{SectionKind::prepacked, prepacked_section(opt), {}, 0, 0, 0});

  // Layout and checksums.
  size_t cursor = kHeaderBytes + sections.size() * kEntryBytes;
  for (auto& s : sections) {
    size_t align = s.kind == SectionKind::weights || s.kind == SectionKind::prepacked ? kWeightsAlignment : 64;
    cursor = round_up(cursor, align);
    s.offset = cursor;
    if (s.kind != SectionKind::weights) {
      s.size = s.bytes.size();
      s.checksum = XXH3_64bits(s.bytes.data(), s.bytes.size());
    } else {
      XXH3_state_t* st = XXH3_createState();
      XXH3_64bits_reset(st);
      static const char zeros[kTensorAlignment] = {};
      size_t pos = 0;
      for (auto& e : s.weights) {
        if (e.offset > pos) XXH3_64bits_update(st, zeros, e.offset - pos);
        XXH3_64bits_update(st, g.initializers.at(e.value).raw(), e.nbytes);
        pos = e.offset + e.nbytes;
      }
      s.checksum = XXH3_64bits_digest(st);
      XXH3_freeState(st);
    }
    cursor += s.size;
  }
  const size_t file_bytes = cursor;

  std::string table;
  for (auto& s : sections) {
    put<uint32_t>(table, uint32_t(s.kind));
    put<uint32_t>(table, 0);
    put<uint64_t>(table, s.offset);
    put<uint64_t>(table, s.size);
    put<uint64_t>(table, s.checksum);
  }
  std::string header(kMagic, 8);
  put<uint32_t>(header, kOfflineFormatVersion);
  put<uint32_t>(header, uint32_t(sections.size()));
  put<uint64_t>(header, file_bytes);
  std::string producer(kProducer);
  producer.resize(kProducerBytes, '\0');
  header += producer;
  put<uint64_t>(header, XXH3_64bits(table.data(), table.size()));
  put<uint64_t>(header, XXH3_64bits(header.data(), header.size()));

  size_t written = 0;
  auto pad_to = [&](size_t pos) {
    static const char zeros[kWeightsAlignment] = {};
    while (written < pos) {
      size_t n = std::min(pos - written, sizeof(zeros));
      sink(zeros, n);
      written += n;
    }
  };
  sink(header.data(), header.size());
  sink(table.data(), table.size());
  written = header.size() + table.size();
  for (auto& s : sections) {
    pad_to(s.offset);
    if (s.kind != SectionKind::weights) {
      sink(s.bytes.data(), s.bytes.size());
      written += s.bytes.size();
    } else {
      for (auto& e : s.weights) {
        pad_to(s.offset + e.offset);
        sink(g.initializers.at(e.value).raw(), e.nbytes);
        written += e.nbytes;
      }
      pad_to(s.offset + s.size);
    }
  }
  SEGMUX_CHECK(written == file_bytes, "offline model writer: wrote ", written, " bytes, planned ", file_bytes);
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

std::string serialize_offline_model(const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt) {
  std::string out;
  emit(g, plan, opt, [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  return out;
}

void write_offline_model(const std::string& path, const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt) {
  AtomicFile out(path);
  emit(g, plan, opt, [&](const void* p, size_t n) { out.write(p, n); });
  out.commit(/*sync=*/true);
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

namespace {

// XXH3-64 of a section, read in chunks whose pages leave the resident set once hashed (when the bytes
// are a file mapping): verifying a model then never holds the whole file resident; the kernels read the
// weights again when they prepack them.
uint64_t hash_and_release(const std::byte* p, size_t n) {
  constexpr size_t kChunk = size_t(32) << 20;
  if (n <= kChunk) {
    uint64_t h = XXH3_64bits(p, n);
    release_mapped_pages(p, n);
    return h;
  }
  XXH3_state_t* st = XXH3_createState();
  SEGMUX_CHECK(st != nullptr, "out of memory (checksum state)");
  XXH3_64bits_reset(st);
  for (size_t pos = 0; pos < n; pos += kChunk) {
    const size_t len = std::min(kChunk, n - pos);
    XXH3_64bits_update(st, p + pos, len);
    release_mapped_pages(p + pos, len);
  }
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace

OfflineModel load_offline_model(std::shared_ptr<Storage> storage, const std::string& what, const LoadOptions& opt) {
  SEGMUX_CHECK(storage != nullptr, what, ": no data");
  const std::byte* base = storage->data;
  const size_t size = storage->nbytes;
  SEGMUX_CHECK(size > 0, what, " is empty: not a segmux offline model (.smx)");
  SEGMUX_CHECK(std::memcmp(base, kMagic, std::min<size_t>(size, 8)) == 0, what,
               " is not a segmux offline model (.smx): it does not start with the .smx magic bytes");
  SEGMUX_CHECK(size >= kHeaderBytes, what, " is truncated: ", size, " bytes, the header alone needs ", kHeaderBytes);
  OfflineModel m;
  m.format_version = get<uint32_t>(base + 8);
  SEGMUX_CHECK(m.format_version == kOfflineFormatVersion, what, " has offline format version ", m.format_version,
               ", this build reads version ", kOfflineFormatVersion, " (recompile the model)");
  SEGMUX_CHECK(!opt.verify_checksums || get<uint64_t>(base + 56) == XXH3_64bits(base, 56), what,
               ": header checksum mismatch (corrupted)");
  const uint32_t count = get<uint32_t>(base + 12);
  const uint64_t file_bytes = get<uint64_t>(base + 16);
  m.producer = std::string(reinterpret_cast<const char*>(base + 24), kProducerBytes);
  m.producer.resize(std::strlen(m.producer.c_str()));
  SEGMUX_CHECK(size >= file_bytes, what, " is truncated: ", size, " bytes, the header says ", file_bytes);
  SEGMUX_CHECK(size == file_bytes, what, " has ", size - file_bytes, " unexpected trailing bytes");
  SEGMUX_CHECK(count >= 4 && count <= kMaxSections, what, ": bad section count ", count);
  const size_t table_end = kHeaderBytes + size_t(count) * kEntryBytes;
  SEGMUX_CHECK(table_end <= size, what, " is truncated inside the section table");
  SEGMUX_CHECK(
      !opt.verify_checksums || get<uint64_t>(base + 48) == XXH3_64bits(base + kHeaderBytes, table_end - kHeaderBytes),
      what, ": section table checksum mismatch (corrupted)");
  m.file_bytes = size;

  struct Entry {
    SectionKind kind;
    size_t offset, size;
    uint64_t checksum;
  };
  std::vector<Entry> entries;
  size_t cursor = table_end;
  static const char* names[] = {"?", "meta", "graph", "plan", "weights", "prepacked"};
  for (uint32_t i = 0; i < count; ++i) {
    const std::byte* e = base + kHeaderBytes + size_t(i) * kEntryBytes;
    uint32_t kind = get<uint32_t>(e);
    uint64_t off = get<uint64_t>(e + 8), len = get<uint64_t>(e + 16);
    SEGMUX_CHECK(kind == i + 1 && kind <= uint32_t(SectionKind::prepacked), what, ": section ", i,
                 " has unexpected kind ", kind);
    SEGMUX_CHECK(off >= cursor && off <= size && len <= size - off, what, ": ", names[kind],
                 " section lies outside the file or overlaps another");
    for (size_t p = cursor; p < off; ++p)
      SEGMUX_CHECK(base[p] == std::byte{0}, what, ": nonzero padding byte at offset ", p, " (corrupted)");
    const bool large = kind == uint32_t(SectionKind::weights) || kind == uint32_t(SectionKind::prepacked);
    if (opt.verify_checksums && (opt.verify_weights || !large))
      SEGMUX_CHECK(hash_and_release(base + off, len) == get<uint64_t>(e + 24), what, ": ", names[kind],
                   " section checksum mismatch (corrupted)");
    entries.push_back(Entry{SectionKind(kind), size_t(off), size_t(len), get<uint64_t>(e + 24)});
    cursor = size_t(off + len);
  }
  SEGMUX_CHECK(cursor == size, what, ": ", size - cursor, " bytes after the last section");

  try {
    // META
    const Entry& me = entries[0];
    json meta = parse_meta(base + me.offset, me.size, what + " meta section");
    m.meta_json.assign(reinterpret_cast<const char*>(base + me.offset), me.size);
    m.target_isa = meta.value("target_isa", std::string());
    SEGMUX_CHECK(!m.target_isa.empty(), what, ": meta section names no target ISA");
    if (opt.check_isa)
      SEGMUX_CHECK(host_supports_isa(m.target_isa), what, " was compiled for ISA '", m.target_isa,
                   "', this machine supports '", host_isa(), "' (kernel level ", isa_name(active_isa()),
                   "; recompile with --target generic)");

    // WEIGHTS (views into the mapping)
    const Entry& we = entries[3];
    m.weights_bytes = we.size;

    // GRAPH
    const Entry& ge = entries[1];
    json gj = parse_cbor(base + ge.offset, ge.size, what + " graph section");
    ir::Graph& g = m.graph;
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
      SEGMUX_CHECK(nb == uint64_t(n) * dtype_size(val.dtype), what, ": weight '", val.name, "' holds ", nb,
                   " bytes for ", dtype_name(val.dtype), " ", shape_str(val.shape));
      SEGMUX_CHECK(off % kTensorAlignment == 0 && off <= we.size && nb <= we.size - off, what, ": weight '", val.name,
                   "' lies outside the weights section");
      SEGMUX_CHECK(!g.is_initializer(id), what, ": weight '", val.name, "' is listed twice");
      g.initializers.emplace(id, Tensor(val.dtype, val.shape, storage_keep, we.offset + size_t(off)));
    }
    ir::verify_structure(g);
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int o : g.nodes[n].outputs)
        if (o >= 0) g.values[size_t(o)].producer = int(n);
    // Shapes recorded in the file must be what inference derives (the plan was sized from them).
    std::vector<ir::Value> recorded = g.values;
    ir::infer_shapes(g);
    for (size_t v = 0; v < g.values.size(); ++v) {
      const ir::Value& a = recorded[v];
      const ir::Value& b = g.values[v];
      SEGMUX_CHECK(a.dtype == b.dtype && a.has_shape == b.has_shape && (!a.has_shape || a.shape == b.shape), what,
                   ": value '", a.name, "' is recorded as ", dtype_name(a.dtype), " ",
                   a.has_shape ? shape_str(a.shape) : "?", " but the graph gives ", dtype_name(b.dtype), " ",
                   b.has_shape ? shape_str(b.shape) : "?");
    }

    // PLAN
    const Entry& pe = entries[2];
    json pj = parse_cbor(base + pe.offset, pe.size, what + " plan section");
    m.plan.arena_bytes = pj.at("arena_bytes").get<size_t>();
    m.plan.sum_tensor_bytes = pj.at("sum_tensor_bytes").get<size_t>();
    m.plan.alignment = pj.at("alignment").get<size_t>();
    m.plan.offsets = pj.at("offsets").get<std::vector<int64_t>>();
    m.plan.view_nodes.assign(g.nodes.size(), 0);
    for (int n : pj.at("views").get<std::vector<int>>()) {
      SEGMUX_CHECK(n >= 0 && size_t(n) < g.nodes.size(), what, ": plan names view node ", n, " of ", g.nodes.size());
      m.plan.view_nodes[size_t(n)] = 1;
    }
    SEGMUX_CHECK(m.plan.arena_bytes <= m.plan.sum_tensor_bytes, what, ": plan arena (", m.plan.arena_bytes,
                 " bytes) exceeds the sum of its tensors (", m.plan.sum_tensor_bytes, ")");
    validate_plan(g, m.plan);

    // PREPACKED (optional)
    if (entries.size() > 4) {
      const Entry& xe = entries[4];
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
        SEGMUX_CHECK(blob.node >= 0 && size_t(blob.node) < g.nodes.size(), what, ": prepacked blob for node ",
                     blob.node, " of ", g.nodes.size());
        SEGMUX_CHECK(off <= xe.size - blob_base && len <= xe.size - blob_base - off, what, ": prepacked blob '",
                     blob.key, "' lies outside its section");
        // Blobs for another ISA are ignored: kernels repack from the weights at load.
        if (m.prepacked_isa == host_isa())
          blob.data = Tensor(DType::u8, {int64_t(len)}, storage, xe.offset + blob_base + size_t(off));
        if (blob.data.defined()) m.prepacked.push_back(std::move(blob));
      }
    }
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
