#include "runtime/offline_format.h"

#include "io/json_limits.h"

namespace segmux::offline_format {

namespace {

json tensor_meta(const Tensor& t) { return json{{"dtype", std::string(dtype_name(t.dtype()))}, {"shape", t.shape()}}; }

std::string binary_string(const json& j) {
  const auto& b = j.get_binary();
  return std::string(b.begin(), b.end());
}

}  // namespace

json parse_cbor(const std::byte* p, size_t n, const std::string& what) {
  return parse_untrusted_cbor(p, n, what, {.max_depth = kMaxCborDepth, .max_bytes = n});
}

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

}  // namespace segmux::offline_format
