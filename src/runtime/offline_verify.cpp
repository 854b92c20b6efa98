#include "runtime/offline_verify.h"

#include <algorithm>

#include "core/mapped_pages.h"
#include "ir/op_schema.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace segmux::offline_format {

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

// The header: magic, format version, header checksum, file size, section count and table checksum.
// Returns the section count.
uint32_t verify_header(const std::byte* base, size_t size, const std::string& what, const LoadOptions& opt, Layout& l) {
  SEGMUX_CHECK(size > 0, what, " is empty: not a segmux offline model (.smx)");
  SEGMUX_CHECK(std::memcmp(base, kMagic, std::min<size_t>(size, 8)) == 0, what,
               " is not a segmux offline model (.smx): it does not start with the .smx magic bytes");
  SEGMUX_CHECK(size >= kHeaderBytes, what, " is truncated: ", size, " bytes, the header alone needs ", kHeaderBytes);
  l.format_version = get<uint32_t>(base + 8);
  SEGMUX_CHECK(l.format_version == kOfflineFormatVersion, what, " has offline format version ", l.format_version,
               ", this build reads version ", kOfflineFormatVersion, " (recompile the model)");
  SEGMUX_CHECK(!opt.verify_checksums || get<uint64_t>(base + 56) == XXH3_64bits(base, 56), what,
               ": header checksum mismatch (corrupted)");
  const uint32_t count = get<uint32_t>(base + 12);
  const uint64_t file_bytes = get<uint64_t>(base + 16);
  l.producer = std::string(reinterpret_cast<const char*>(base + 24), kProducerBytes);
  l.producer.resize(std::strlen(l.producer.c_str()));
  SEGMUX_CHECK(size >= file_bytes, what, " is truncated: ", size, " bytes, the header says ", file_bytes);
  SEGMUX_CHECK(size == file_bytes, what, " has ", size - file_bytes, " unexpected trailing bytes");
  SEGMUX_CHECK(count >= 4 && count <= kMaxSections, what, ": bad section count ", count);
  const size_t table_end = kHeaderBytes + size_t(count) * kEntryBytes;
  SEGMUX_CHECK(table_end <= size, what, " is truncated inside the section table");
  SEGMUX_CHECK(
      !opt.verify_checksums || get<uint64_t>(base + 48) == XXH3_64bits(base + kHeaderBytes, table_end - kHeaderBytes),
      what, ": section table checksum mismatch (corrupted)");
  return count;
}

// The section table: kinds in order, bounds, zero padding between sections, section checksums.
void verify_sections(const std::byte* base, size_t size, uint32_t count, const std::string& what,
                     const LoadOptions& opt, Layout& l) {
  size_t cursor = kHeaderBytes + size_t(count) * kEntryBytes;
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
    l.sections.push_back(SectionEntry{SectionKind(kind), size_t(off), size_t(len), get<uint64_t>(e + 24)});
    cursor = size_t(off + len);
  }
  SEGMUX_CHECK(cursor == size, what, ": ", size - cursor, " bytes after the last section");
}

}  // namespace

Layout verify_layout(const std::byte* base, size_t size, const std::string& what, const LoadOptions& opt) {
  Layout l;
  const uint32_t count = verify_header(base, size, what, opt, l);
  verify_sections(base, size, count, what, opt, l);
  return l;
}

void verify_recorded_shapes(ir::Graph& g, const std::string& what) {
  ir::verify_structure(g);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int o : g.nodes[n].outputs)
      if (o >= 0) g.values[size_t(o)].producer = int(n);
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
}

}  // namespace segmux::offline_format
