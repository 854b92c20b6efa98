// The .smx byte layout (docs/offline-format.md) shared by the offline model's writer, reader and
// verifier: constants, little-endian field access, and the codecs of the CBOR / JSON sections. Internal
// to src/runtime/ (the public interface is offline_model.h).
#pragma once
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/graph.h"
#include "runtime/offline_model.h"

namespace segmux::offline_format {

using json = nlohmann::json;

constexpr char kMagic[8] = {'S', 'E', 'G', 'M', 'U', 'X', 'M', 'D'};
constexpr size_t kHeaderBytes = 64;
constexpr size_t kEntryBytes = 32;
constexpr uint32_t kMaxSections = 16;
constexpr size_t kProducerBytes = 24;
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 48;
constexpr size_t kMaxMetaBytes = size_t(1) << 20;  // signature, options, stats: a few KB in practice
// CBOR sections: nested at most this deep (a graph needs far less), checked before the DOM exists.
constexpr size_t kMaxCborDepth = 32;

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

inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// One entry of the section table.
struct SectionEntry {
  SectionKind kind;
  size_t offset, size;
  uint64_t checksum;
};

json parse_cbor(const std::byte* p, size_t n, const std::string& what);
// The META section (JSON text): bounded in size and depth before parsing, an object.
json parse_meta(const std::byte* p, size_t n, const std::string& what);
// Element count with overflow checks (shapes come from untrusted files).
int64_t checked_numel(const Shape& shape, const std::string& what);
json shape_json(const ir::Value& v);
DType parse_dtype(const json& j, const std::string& what);
json attr_json(const ir::AttrValue& a);
ir::AttrValue parse_attr(const json& j, const std::string& what);

}  // namespace segmux::offline_format
