// Two tracks.json files of the same video by two engines (our runtime and ONNX Runtime): the same frames,
// the same ids, scores within video parity's 1e-3 and masks within its bar (IoU >= 0.99, or <= 16 px on
// masks under 1,600). Exact mask equality is not a property of two engines: their float rounding
// differs, and a tracker carries a flipped boundary pixel on to the next frames.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/rle_json.h"
#include "verify/video_parity.h"

namespace segmux::test {

// Returns the number of objects compared.
inline int expect_tracks_match(const nlohmann::json& a, const nlohmann::json& b) {
  const auto &fa = a["frames"], &fb = b["frames"];
  EXPECT_EQ(fa.size(), fb.size());
  int objects = 0;
  for (size_t f = 0; f < std::min(fa.size(), fb.size()); ++f) {
    EXPECT_EQ(fa[f]["objects"].size(), fb[f]["objects"].size()) << "frame " << f;
    for (size_t k = 0; k < std::min(fa[f]["objects"].size(), fb[f]["objects"].size()); ++k, ++objects) {
      const auto &x = fa[f]["objects"][k], &y = fb[f]["objects"][k];
      EXPECT_EQ(x["id"], y["id"]) << "frame " << f;
      EXPECT_NEAR(x["score"].get<double>(), y["score"].get<double>(), 1e-3) << "frame " << f;
      if (!x.contains("mask_rle") || x["mask_rle"].is_null()) {
        ADD_FAILURE() << "frame " << f << ": no mask_rle in " << x.dump();
        continue;
      }
      long long diff = 0;
      EXPECT_TRUE(verify::mask_within_parity_bar(mask_of(x["mask_rle"]), mask_of(y["mask_rle"]), &diff))
          << "frame " << f << " object " << x["id"] << ": " << diff << " px differ";
    }
  }
  return objects;
}

}  // namespace segmux::test
