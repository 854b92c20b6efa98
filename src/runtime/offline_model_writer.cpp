// The .smx writer: graph, memory plan and prepacked blobs serialised in the layout of
// docs/offline-format.md, streamed (the weights are never copied into one buffer) and written atomically.
#include <algorithm>
#include <functional>

#include "io/files.h"
#include "runtime/offline_format.h"
#include "runtime/offline_model.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace segmux {

namespace {

using namespace offline_format;

constexpr const char* kProducer = "segmux " SEGMUX_VERSION;  // project(VERSION) in CMakeLists.txt

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

// The META section: the caller's extra fields, then what the file itself says (format, producer,
// target ISA, signature, sizes).
std::string meta_section(const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt, size_t weights_bytes) {
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
  return meta_text;
}

// XXH3-64 of the weights section as laid out (zero padding between the tensors), streamed from the
// graph's tensors.
uint64_t weights_checksum(const ir::Graph& g, const std::vector<WeightEntry>& weights) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  static const char zeros[kTensorAlignment] = {};
  size_t pos = 0;
  for (auto& e : weights) {
    if (e.offset > pos) XXH3_64bits_update(st, zeros, e.offset - pos);
    XXH3_64bits_update(st, g.initializers.at(e.value).raw(), e.nbytes);
    pos = e.offset + e.nbytes;
  }
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

// Places the sections (offsets, sizes, checksums); returns the file size.
size_t lay_out(const ir::Graph& g, std::vector<Section>& sections) {
  size_t cursor = kHeaderBytes + sections.size() * kEntryBytes;
  for (auto& s : sections) {
    size_t align = s.kind == SectionKind::weights || s.kind == SectionKind::prepacked ? kWeightsAlignment : 64;
    cursor = round_up(cursor, align);
    s.offset = cursor;
    if (s.kind != SectionKind::weights) {
      s.size = s.bytes.size();
      s.checksum = XXH3_64bits(s.bytes.data(), s.bytes.size());
    } else {
      s.checksum = weights_checksum(g, s.weights);
    }
    cursor += s.size;
  }
  return cursor;
}

// The header (magic, version, section count, file size, producer, table and header checksums)
// followed by the section table.
std::string header_and_table(const std::vector<Section>& sections, size_t file_bytes) {
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
  return header + table;
}

using SinkFn = std::function<void(const void*, size_t)>;

// Streams the laid-out file to `sink`: the header and table, then each section at its offset.
void stream(const ir::Graph& g, const std::vector<Section>& sections, size_t file_bytes, const SinkFn& sink) {
  const std::string head = header_and_table(sections, file_bytes);
  size_t written = 0;
  auto pad_to = [&](size_t pos) {
    static const char zeros[kWeightsAlignment] = {};
    while (written < pos) {
      size_t n = std::min(pos - written, sizeof(zeros));
      sink(zeros, n);
      written += n;
    }
  };
  sink(head.data(), head.size());
  written = head.size();
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

void emit(const ir::Graph& g, const MemoryPlan& plan, const WriteOptions& opt, const SinkFn& sink) {
  validate_plan(g, plan);
  // Any name is written (the compile driver restricts it to known ISAs); the loader refuses names the
  // host does not support.
  SEGMUX_CHECK(!opt.target_isa.empty() && opt.target_isa.size() <= 64, "bad target ISA name '", opt.target_isa, "'");
  std::vector<Section> sections;
  size_t weights_bytes = 0;
  std::vector<WeightEntry> weights;
  std::string graph_bytes = graph_section(g, weights, weights_bytes);
  sections.push_back(Section{SectionKind::meta, meta_section(g, plan, opt, weights_bytes), {}, 0, 0, 0});
  sections.push_back(Section{SectionKind::graph, std::move(graph_bytes), {}, 0, 0, 0});
  sections.push_back(Section{SectionKind::plan, plan_section(plan), {}, 0, 0, 0});
  sections.push_back(Section{SectionKind::weights, {}, weights, weights_bytes, 0, 0});
  if (!opt.prepacked.empty()) sections.push_back(Section{SectionKind::prepacked, prepacked_section(opt), {}, 0, 0, 0});
  const size_t file_bytes = lay_out(g, sections);
  stream(g, sections, file_bytes, sink);
}

}  // namespace

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

}  // namespace segmux
