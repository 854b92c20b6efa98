// The golden sets made by tools/fixtures (tests/fixtures/sam31-tiny-image, sam31-tiny-prompts): the
// modules segmux already has a candidate for pass `run_parity`, and the JSON outputs are consistent
// (counts, RLE areas, image sizes, request order), so a broken regeneration or a truncated file fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/safetensors.h"
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
  verify::ParityOptions o;
  o.fixture_dir = kSets + "/sam31-tiny-image";
  o.weights_files = {kWeights};
  o.candidates = {"text_encoder", "backbone", "tokenizer"};
  o.onnxruntime = o.compiled = false;
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  EXPECT_GT(r.rows.size(), 10u);
}

// The memory encodings of the clicked frames (point requests) and a propagation step whose memory holds
// a clicked conditioning frame, through the existing memory-encoder and propagation candidates.
TEST(FixtureSets, PromptsSetMemoryEncoderAndPropagationPassParity) {
  verify::ParityOptions o;
  o.fixture_dir = kSets + "/sam31-tiny-prompts";
  o.weights_files = {kWeights};
  o.candidates = {"memory_encoder", "propagation_decoder"};
  o.onnxruntime = o.compiled = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> labels;
  for (auto& row : r.rows) labels.insert(row.case_label);
  EXPECT_TRUE(labels.count("memory_encoder_refine_obj2_f006_2clicks") &&
              labels.count("propagation_f007_after_clicks_state0"))
      << log.str();
}

// An official call carries every multiplex bucket of a tracker state at once (tensors batched over
// the buckets, more objects than multiplex_count): parity runs the candidates bucket by bucket and
// compares each bucket's slice. The two-bucket files are made from the shared set's one-bucket ones
// by a second bucket holding copies of the same objects (so the official answer for bucket 1 is
// bucket 0's): batched tensors and data-space objects twice along axis 0, the layout extended.
void write_two_bucket_copy(const std::string& from, const std::string& to) {
  TensorFile f = read_safetensors(from);
  auto twice = [](const Tensor& t) {
    Shape shape = t.shape();
    shape[0] *= 2;
    Tensor out(t.dtype(), shape);
    std::memcpy(out.raw(), t.raw(), t.nbytes());
    std::memcpy(static_cast<std::byte*>(out.raw()) + t.nbytes(), t.raw(), t.nbytes());
    return out;
  };
  auto batched = [](const std::string& n) {
    for (const char* end : {".maskmem_features", ".obj_ptr"})
      if (n.size() > std::string(end).size() && n.ends_with(end) && n.starts_with("in.memory_bank.")) return true;
    return n.starts_with("out.") || n == "in.pred_masks_high_res" || n == "in.object_score_logits" ||
           n == "in.maskmem_backbone.pix_feat";
  };
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& n : f.names) tensors.push_back({n, batched(n) ? twice(f.at(n)) : f.at(n)});
  std::map<std::string, std::string> meta = f.metadata;
  nlohmann::json state = nlohmann::json::parse(meta.at("multiplex_state"));
  const int n = int(state["object_ids"].size());
  nlohmann::json second = state["assignments"][0];
  for (auto& v : second)
    if (v.get<int>() >= 0) v = v.get<int>() + n;
  state["assignments"].push_back(second);
  state["num_buckets"] = 2;
  for (int i = 0; i < n; ++i) state["object_ids"].push_back(state["object_ids"][size_t(i)].get<int64_t>() + 100);
  meta["multiplex_state"] = state.dump();
  if (meta.count("conditioning_objects")) {
    nlohmann::json cond = nlohmann::json::parse(meta["conditioning_objects"]);
    const size_t k = cond.size();
    for (size_t i = 0; i < k; ++i) cond.push_back(cond[i].get<int>() + n);
    meta["conditioning_objects"] = cond.dump();
  }
  write_safetensors(to, tensors, meta);
}

TEST(FixtureSets, TwoMultiplexBucketsAreCheckedBucketByBucket) {
  namespace fs = std::filesystem;
  const std::string shared = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  const fs::path dir = fs::path(::testing::TempDir()) / "segmux-two-buckets";
  fs::remove_all(dir);
  fs::create_directories(dir / "modules");
  fs::copy_file(shared + "/config.json", dir / "config.json");
  for (const char* m : {"propagation_f010", "memory_encoder_propagate_f010"})
    write_two_bucket_copy(shared + "/modules/" + m + ".safetensors",
                          (dir / "modules" / (std::string(m) + ".safetensors")).string());
  verify::ParityOptions o;
  o.fixture_dir = dir.string();
  o.weights_files = {kWeights};
  o.candidates = {"memory_encoder", "propagation_decoder"};
  o.onnxruntime = o.compiled = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> labels;
  for (auto& row : r.rows) labels.insert(row.case_label);
  for (const char* l : {"propagation_f010_bucket0", "propagation_f010_bucket1", "memory_encoder_propagate_f010_bucket0",
                        "memory_encoder_propagate_f010_bucket1"})
    EXPECT_TRUE(labels.count(l)) << l << "\n" << log.str();
  fs::remove_all(dir);
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
