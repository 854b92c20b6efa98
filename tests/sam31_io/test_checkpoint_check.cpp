// Expected state-dict table derived from the config, validation of weights against it, random
// checkpoints, and the ViT RoPE tables recomputed from the config.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/pytorch_zip.h"
#include "models/sam31/state_dict.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/random_checkpoint.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

ModelConfig tiny_config() { return segmux::verify::load_fixture_config(kFixture + "/config.json"); }

}  // namespace

TEST(CheckpointCheck, FullSizeTableEqualsOfficialShapes) {
  std::ifstream f(kFixture + "/official_fullsize_state_dict_shapes.json");
  ASSERT_TRUE(f.good());
  nlohmann::ordered_json official = nlohmann::ordered_json::parse(f);
  auto table = expected_state_dict(default_config());
  ASSERT_EQ(table.size(), official.size());
  EXPECT_EQ(table.size(), 1623u);
  size_t i = 0;
  for (auto it = official.begin(); it != official.end(); ++it, ++i) {
    const auto& e = table[i];
    EXPECT_EQ(e.key, it.key()) << "entry " << i;  // same keys in the same (state_dict) order
    EXPECT_EQ(e.shape, (*it)[0].get<Shape>()) << it.key();
    EXPECT_EQ(e.dtype_name(), (*it)[1].get<std::string>()) << it.key();
  }
}

TEST(CheckpointCheck, TinyConfigValidatesFixtureWeights) {
  const ModelConfig cfg = tiny_config();
  for (const char* file : {"/weights.pt", "/weights.safetensors"}) {
    Weights w = Weights::load(kFixture + file);
    WeightsProblems p = compare_weights(w, cfg);
    EXPECT_TRUE(p.ok()) << file << ": " << p.message();
    EXPECT_NO_THROW(check_weights(w, cfg));
    // Same order as the official state_dict.
    auto table = expected_state_dict(cfg);
    ASSERT_EQ(w.file_order().size(), table.size());
    for (size_t i = 0; i < table.size(); ++i) EXPECT_EQ(w.file_order()[i], table[i].key);
  }
  // The full-size table does not accept tiny weights.
  EXPECT_THROW(check_weights(Weights::load(kFixture + "/weights.pt"), default_config()), Error);
}

TEST(CheckpointCheck, OneErrorNamesEveryProblem) {
  const ModelConfig cfg = tiny_config();
  Weights w = Weights::load(kFixture + "/weights.pt");
  const std::string dropped = "detector.transformer.decoder.query_embed.weight";
  const std::string renamed = "tracker.model.no_obj_ptr_linear.bias";
  const std::string reshaped = "detector.backbone.vision_backbone.trunk.blocks.1.mlp.fc1.weight";
  w.erase(dropped);
  w.set(renamed + "_renamed", w.get(renamed));
  w.erase(renamed);
  w.set(reshaped, Tensor(DType::f32, {3, 3}));
  WeightsProblems p = compare_weights(w, cfg);
  EXPECT_EQ(p.missing, (std::vector<std::string>{renamed, dropped}));
  ASSERT_EQ(p.unexpected.size(), 1u);
  EXPECT_EQ(p.unexpected[0], renamed + "_renamed (f32 [64])");
  ASSERT_EQ(p.mis_shaped.size(), 1u);
  EXPECT_EQ(p.mis_shaped[0], reshaped + ": f32 [3,3] where f32 [296,64] expected");
  try {
    check_weights(w, cfg);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& key : {dropped, renamed, renamed + "_renamed", reshaped})
      EXPECT_NE(msg.find(key), std::string::npos) << key << " not named in: " << msg;
    EXPECT_NE(msg.find("2 missing, 1 unexpected, 1 mis-shaped"), std::string::npos) << msg;
  }
}

TEST(CheckpointCheck, RandomCheckpointAndItsBrokenVariants) {
  const ModelConfig cfg = tiny_config();
  const std::string path = ::testing::TempDir() + "segmux_sam31_io_" + std::to_string(::getpid()) + "_random.pt";
  verify::write_random_checkpoint(path, cfg, 42);
  Weights w = Weights::load(path);
  EXPECT_NO_THROW(check_weights(w, cfg));
  EXPECT_EQ(w.size(), expected_state_dict(cfg).size());
  // Seeded: the same seed gives the same bytes, another seed other values.
  const std::string path2 = path + ".2";
  verify::write_random_checkpoint(path2, cfg, 42);
  Weights w2 = Weights::load(path2);
  const std::string probe = "detector.transformer.decoder.layers.0.linear1.weight";
  EXPECT_TRUE(w.get(probe).identical(w2.get(probe)));
  verify::write_random_checkpoint(path2, cfg, 43);
  EXPECT_FALSE(w.get(probe).identical(Weights::load(path2).get(probe)));
  // RoPE tables are the real ones, not noise.
  EXPECT_TRUE(w.get("detector.backbone.vision_backbone.trunk.blocks.1.attn.freqs_cis")
                  .identical(verify::vit_rope_table(cfg, 1)));
  EXPECT_TRUE(w.is_complex("detector.backbone.vision_backbone.trunk.blocks.1.attn.freqs_cis"));

  // Variants: a key missing, a key renamed, a key mis-shaped -> each refused naming the key.
  struct Variant {
    verify::CheckpointEdits edits;
    std::string needle;
  };
  const std::string key = "tracker.model.sam_mask_decoder.conv_s1.weight";
  std::vector<Variant> variants = {
      {verify::CheckpointEdits{{key}, {}, {}}, "missing:\n  " + key},
      {verify::CheckpointEdits{{}, {{key, key + ".old"}}, {}}, "unexpected:\n  " + key + ".old"},
      {verify::CheckpointEdits{{}, {}, {key}}, key + ": f32 [17,64,1,1] where f32 [16,64,1,1] expected"},
  };
  for (const auto& v : variants) {
    verify::write_random_checkpoint(path2, cfg, 1, v.edits);
    try {
      check_weights(Weights::load(path2), cfg);
      ADD_FAILURE() << "variant accepted: " << v.needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(v.needle), std::string::npos) << e.what();
    }
  }
  std::remove(path.c_str());
  std::remove(path2.c_str());
}

TEST(CheckpointCheck, RopeTablesMatchTheFixtureCheckpoint) {
  const ModelConfig cfg = tiny_config();
  Weights w = Weights::load(kFixture + "/weights.pt");
  for (int b = 0; b < cfg.vit_depth; ++b) {
    const Tensor& ref =
        w.get("detector.backbone.vision_backbone.trunk.blocks." + std::to_string(b) + ".attn.freqs_cis");
    Tensor ours = verify::vit_rope_table(cfg, b);
    ASSERT_EQ(ours.shape(), ref.shape()) << "block " << b;
    // The official table is float32 math (pow, products, cos/sin); ours rounds the same steps to
    // float32 (cos/sin taken in double, then rounded): the tiny fixture's tables agree bit for bit.
    EXPECT_TRUE(ours.identical(ref)) << "block " << b;
  }
  // Full size: window blocks 24x24, global blocks 72x72 tokens, 32 complex frequencies.
  const ModelConfig full = default_config();
  EXPECT_EQ(verify::vit_rope_table(full, 0).shape(), (Shape{576, 32, 2}));
  EXPECT_EQ(verify::vit_rope_table(full, 7).shape(), (Shape{5184, 32, 2}));
}
