// Backbone candidate: RoPE tables against the checkpoint's freqs_cis, tiled abs-pos, sine position
// encodings against the fixture, trunk / neck parity (official bf16 MLP and the fp32 variant).
#include <gtest/gtest.h>

#include <cmath>

#include "io/safetensors.h"
#include "models/sam31/backbone.h"
#include "models/sam31/config.h"
#include "models/sam31/layers.h"
#include "models/sam31/weights.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/parity.h"

namespace segmux::sam31 {
namespace {

const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::string kTrunk = "detector.backbone.vision_backbone.trunk";

TEST(Backbone, RopeTablesMatchTheCheckpointFreqsCis) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  const int hd = cfg.vit_dim / cfg.vit_heads, ws = cfg.vit_window, G = cfg.token_grid();
  for (int blk = 0; blk < cfg.vit_depth; ++blk) {
    const bool global = cfg.vit_block_is_global(blk);
    const layers::RopeTables t = global
                                     ? layers::axial_rope_tables(hd, G, G, float(cfg.rope_theta), float(ws) / float(G))
                                     : layers::axial_rope_tables(hd, ws, ws, float(cfg.rope_theta), 1.0f);
    const Tensor& f = w.get(kTrunk + ".blocks." + std::to_string(blk) + ".attn.freqs_cis");  // [L, hd/2, 2]
    ASSERT_EQ(f.dim(0), t.cos.dim(0)) << "block " << blk;
    ASSERT_EQ(f.dim(1), t.cos.dim(1));
    double worst = 0;
    for (int64_t i = 0; i < t.cos.numel(); ++i) {
      worst = std::max(worst, std::fabs(double(t.cos.data<float>()[i]) - f.data<float>()[2 * i]));
      worst = std::max(worst, std::fabs(double(t.sin.data<float>()[i]) - f.data<float>()[2 * i + 1]));
    }
    EXPECT_LT(worst, 1e-6) << "block " << blk;
  }
}

TEST(Backbone, AbsolutePositionEmbeddingIsTiledWithoutTheClsRow) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  const Tensor pe = vit_abs_pos_embed(cfg, w);
  const Tensor& src = w.get(kTrunk + ".pos_embed");
  const int64_t P = cfg.pos_embed_pretrain_grid(), G = cfg.token_grid(), C = cfg.vit_dim;
  ASSERT_EQ(pe.shape(), (Shape{1, G, G, C}));
  for (int64_t y : {int64_t(0), P - 1, P, G - 1})
    for (int64_t x : {int64_t(0), P, G - 1})
      for (int64_t c : {int64_t(0), C - 1})
        EXPECT_EQ(pe.data<float>()[(y * G + x) * C + c], src.data<float>()[(1 + (y % P) * P + (x % P)) * C + c]);
}

TEST(Backbone, SinePositionEncodingsMatchTheFixture) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  TensorFile f = read_safetensors(kDir + "/modules/backbone.safetensors");
  for (int lvl = 0; lvl < 3; ++lvl) {
    const Tensor& ref = f.at("out.pos" + std::to_string(lvl));
    const Tensor got = layers::sine_position_encoding(cfg.d_model, int(ref.dim(2)), int(ref.dim(3)));
    verify::OutputCheck c = verify::check_output(got, ref, verify::Tolerance{});
    EXPECT_TRUE(c.pass) << "level " << lvl << " max_abs " << c.max_abs;
    EXPECT_LT(c.max_abs, 1e-6);
  }
}

TEST(Backbone, TrunkAndNeckMatchTheOfficialOutputs) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  for (const verify::ParityCase& pc : verify::backbone_parity_cases(kDir, cfg)) {
    Interpreter s(build_backbone_variant(cfg, w, pc.variant), InterpreterOptions{1, false});
    auto out = s.run(pc.inputs);
    for (auto& [name, ref] : pc.expected) {
      verify::OutputCheck c = verify::check_output(out.at(name), ref, verify::Tolerance{});
      EXPECT_TRUE(c.pass) << pc.label << " " << name << ": cosine " << c.cosine << " ratio " << c.ratio;
    }
  }
}

TEST(Backbone, Fp32MlpDiffersFromTheOfficialBf16Path) {
  // The two variants must not be interchangeable: the fp32 trunk misses the bf16 reference by more
  // than the bf16 build does (else the bf16 casts would not be exercised).
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  TensorFile f = read_safetensors(kDir + "/modules/backbone.safetensors");
  BackboneOptions o;
  o.interactive_head = false;
  o.fp32_mlp = true;
  Interpreter s(build_backbone(cfg, w, o), InterpreterOptions{1, false});
  auto out = s.run({{"image", f.at("in.image")}});
  verify::OutputCheck fp32_vs_bf16 =
      verify::check_output(out.at("vit_trunk"), f.at("out.vit_trunk"), verify::Tolerance{});
  verify::OutputCheck fp32_vs_fp32 =
      verify::check_output(out.at("vit_trunk"), f.at("variant_fp32_mlp.out.vit_trunk"), verify::Tolerance{});
  EXPECT_GT(fp32_vs_bf16.max_abs, 10 * fp32_vs_fp32.max_abs);
}

TEST(Backbone, UnknownVariantAndBadConfigAreErrors) {
  ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  EXPECT_THROW(build_backbone_variant(cfg, w, "int8"), Error);
  cfg.vit_heads = 5;
  EXPECT_THROW(build_backbone(cfg, w), Error);
  cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  cfg.vit_global = {};
  EXPECT_THROW(build_backbone(cfg, w), Error);
  cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  cfg.pretrain_img_size = 112;  // pos_embed grid no longer matches the checkpoint
  EXPECT_THROW(build_backbone(cfg, w), Error);
}

}  // namespace
}  // namespace segmux::sam31
