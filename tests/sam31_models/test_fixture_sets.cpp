// The golden sets made by tools/fixtures (tests/fixtures/sam31-tiny-image, sam31-tiny-prompts): the
// modules segmux already has a candidate for pass `run_parity`, and the JSON outputs are consistent
// (counts, RLE areas, image sizes, request order), so a broken regeneration or a truncated file fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "pipeline/masks/rle.h"
#include "verify/sam31/parity.h"

namespace segmux::sam31 {
namespace {

const std::string kSets = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures";
const std::string kWeights = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/weights.safetensors";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

int64_t rle_area(const nlohmann::json& m) {
  pipeline::RleMask rle;
  rle.height = m.at("size")[0];
  rle.width = m.at("size")[1];
  rle.counts = m.at("counts").get<std::vector<int64_t>>();
  return pipeline::rle_decode(rle).area();
}

TEST(FixtureSets, ImageSetBackboneAndTextEncoderPassParity) {
  ParityOptions o;
  o.fixture_dir = kSets + "/sam31-tiny-image";
  o.weights_files = {kWeights};
  o.candidates = {"text_encoder", "backbone", "tokenizer"};
  o.onnxruntime = o.compiled = false;
  o.num_threads = 1;
  std::ostringstream log;
  ParityReport r = run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  EXPECT_GT(r.rows.size(), 10u);
}

// The memory encodings of the clicked frames (point requests) and a propagation step whose memory holds
// a clicked conditioning frame, through the existing memory-encoder and propagation candidates.
TEST(FixtureSets, PromptsSetMemoryEncoderAndPropagationPassParity) {
  ParityOptions o;
  o.fixture_dir = kSets + "/sam31-tiny-prompts";
  o.weights_files = {kWeights};
  o.candidates = {"memory_encoder", "propagation_decoder"};
  o.onnxruntime = o.compiled = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  ParityReport r = run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> labels;
  for (auto& row : r.rows) labels.insert(row.case_label);
  EXPECT_TRUE(labels.count("memory_encoder_refine_obj2_f006_2clicks") &&
              labels.count("propagation_f007_after_clicks_state0"))
      << log.str();
}

TEST(FixtureSets, ImageCasesAreConsistent) {
  const nlohmann::json j = read_json(kSets + "/sam31-tiny-image/image/cases.json");
  ASSERT_GE(j.at("cases").size(), 6u);
  int with_objects = 0, box_only = 0;
  for (const auto& c : j["cases"]) {
    const auto& o = c.at("outputs");
    const size_t n = o.at("scores").size();
    EXPECT_EQ(o.at("query_indices").size(), n) << c["name"];
    EXPECT_EQ(o.at("boxes_xyxy_px").size(), n) << c["name"];
    ASSERT_EQ(o.at("masks_rle").size(), n) << c["name"];
    for (size_t k = 0; k < n; ++k) {
      EXPECT_GT(o["scores"][k].get<double>(), c.at("confidence_threshold").get<double>()) << c["name"];
      EXPECT_EQ(o["masks_rle"][k]["size"][0], c["image_size"][1]) << c["name"];  // [H, W] vs [W, H]
      EXPECT_EQ(rle_area(o["masks_rle"][k]), o["mask_areas"][k].get<int64_t>()) << c["name"];
    }
    with_objects += n > 0;
    if (c.at("steps")[0].at("kind") == "box") {
      ++box_only;
      EXPECT_EQ(c.at("text_used"), "visual") << c["name"];
    }
  }
  EXPECT_GT(with_objects, 0);
  EXPECT_GT(box_only, 0);
}

TEST(FixtureSets, PromptsTraceHoldsTheExampleSequence) {
  const nlohmann::json t = read_json(kSets + "/sam31-tiny-prompts/video/trace.json");
  ASSERT_TRUE(t.contains("prompt") && t.contains("add_prompt") && t.contains("outputs") && t.contains("requests"));
  std::vector<std::string> types;
  for (const auto& r : t["requests"]) types.push_back(r.at("type").get<std::string>());
  const std::vector<std::string> head = {"add_prompt", "propagate_in_video", "remove_object",     "add_prompt",
                                         "add_prompt", "add_prompt",         "propagate_in_video"};
  ASSERT_GE(types.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(types.begin(), types.begin() + long(head.size())), head);
  // The parity phase (text -> propagate) is the first two requests.
  EXPECT_EQ(t["requests"][1]["yields"].size(), t["outputs"].size());
  for (const auto& f : t["outputs"])
    for (size_t k = 0; k < f.at("obj_ids").size(); ++k)
      EXPECT_EQ(rle_area(f["masks_rle"][k]), f["mask_areas"][k].get<int64_t>());
  // Every point request has its interactive-decoder tensors.
  for (const auto& r : t["requests"])
    if (r.contains("points")) {
      ASSERT_TRUE(r.contains("tensors"));
      std::ifstream f(kSets + "/sam31-tiny-prompts/" + r["tensors"].get<std::string>());
      EXPECT_TRUE(f.good()) << r["tensors"];
    }
}

}  // namespace
}  // namespace segmux::sam31
