#include "service/mask_request.h"

#include "core/error.h"
#include "io/json_limits.h"

namespace segmux::service {

using nlohmann::json;

pipeline::BinaryMask parse_object_mask(const json& v, const std::string& where) {
  auto bad = [&](const auto&... parts) { fail(where, ": 'object_mask' ", parts...); };
  if (!v.is_object() || !v.contains("size") || !v.contains("counts"))
    bad("must be an RLE mask {\"size\": [height, width], \"counts\": [...]}, got ", describe_json(v));
  for (const auto& [k, x] : v.items())
    if (k != "size" && k != "counts") bad("has an unknown field '", k, "'");
  const json& size = v.at("size");
  if (!size.is_array() || size.size() != 2 || !size[0].is_number_integer() || !size[1].is_number_integer())
    bad("'size' must be [height, width] (integers), got ", describe_json(size));
  const int64_t h = size[0].get<int64_t>(), w = size[1].get<int64_t>();
  if (h <= 0 || w <= 0 || h > kMaxMaskSide || w > kMaxMaskSide)
    bad("size ", h, "x", w, " is outside 1..", kMaxMaskSide, " pixels per side");
  const json& counts = v.at("counts");
  if (!counts.is_array()) bad("'counts' must be an array of run lengths (uncompressed RLE)");
  pipeline::RleMask rle;
  rle.height = int(h);
  rle.width = int(w);
  int64_t total = 0;
  for (const auto& c : counts) {
    if (!c.is_number_integer() || c.get<int64_t>() < 0 ||
        (c.is_number_unsigned() && c.get<uint64_t>() > uint64_t(h * w)))
      bad("run lengths must be non-negative integers, got ", describe_json(c));
    total += c.get<int64_t>();
    if (total > h * w) bad("runs cover more than its ", h, "x", w, " pixels");
    rle.counts.push_back(c.get<int64_t>());
  }
  if (total != h * w) bad("runs cover ", total, " pixels, its size ", h, "x", w, " has ", h * w);
  return pipeline::rle_decode(rle);
}

json object_mask_json(const pipeline::BinaryMask& mask) {
  const pipeline::RleMask rle = pipeline::rle_encode(mask);
  return {{"size", {rle.height, rle.width}}, {"counts", rle.counts}};
}

}  // namespace segmux::service
