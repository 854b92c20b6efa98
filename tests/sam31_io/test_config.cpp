// ModelConfig: full-size defaults, the fixtures' config.json (read by verification), our flat JSON, and
// clear errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "models/sam31/config.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

std::string fixture_config_text() {
  std::ifstream f(kFixture + "/config.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace

TEST(Config, FullSizeDefaultsAndDerivedSizes) {
  const ModelConfig c = default_config();
  EXPECT_EQ(c.token_grid(), 72);
  EXPECT_EQ(c.pos_embed_pretrain_grid(), 24);
  EXPECT_EQ(c.pos_embed_tiling(), 3);
  EXPECT_EQ(c.vit_mlp_hidden(), 4736);
  EXPECT_EQ(c.vit_head_dim(), 64);
  EXPECT_EQ(c.low_res_mask_size(), 288);
  EXPECT_EQ(c.input_mask_size(), 1152);
  EXPECT_EQ(c.neck_levels(), (std::vector<int>{288, 144, 72}));
  EXPECT_EQ(c.maskmem_downsampler_channels(), (std::vector<int>{32, 16, 64, 256, 1024}));
  EXPECT_EQ(c.tracker_high_res_channels()[0], 32);
  EXPECT_EQ(c.tracker_high_res_channels()[1], 64);
  EXPECT_TRUE(c.vit_block_is_global(31));
  EXPECT_FALSE(c.vit_block_is_global(30));
  EXPECT_NO_THROW(validate_config(c));
}

TEST(Config, FixtureConfigJsonGivesTheReducedValues) {
  const ModelConfig c = verify::load_fixture_config(kFixture + "/config.json");
  EXPECT_EQ(c.name, "sam31-tiny");
  EXPECT_EQ(c.image_size, 168);
  EXPECT_EQ(c.pretrain_img_size, 84);
  EXPECT_EQ(c.vit_dim, 64);
  EXPECT_EQ(c.vit_depth, 4);
  EXPECT_EQ(c.vit_window, 6);
  EXPECT_EQ(c.vit_global, (std::vector<int>{1, 3}));
  EXPECT_EQ(c.d_model, 64);
  EXPECT_EQ(c.ffn_dim, 256);
  EXPECT_EQ(c.geo_layers, 2);
  EXPECT_EQ(c.num_queries, 20);
  EXPECT_EQ(c.maskmem_starting_out_chan, 1);
  EXPECT_EQ(c.multiplex_count, 4);
  EXPECT_EQ(c.max_num_objects, 8);
  EXPECT_EQ(c.text_context_length, 32);
  EXPECT_EQ(c.vocab_size, 49408);
  EXPECT_EQ(c.num_maskmem, 7);
  EXPECT_EQ(c.max_obj_ptrs_in_encoder, 16);
  EXPECT_EQ(c.max_cond_frames_in_attn, 4);
  EXPECT_EQ(c.token_grid(), 12);
  EXPECT_EQ(c.neck_levels(), (std::vector<int>{48, 24, 12}));
  EXPECT_EQ(c.maskmem_downsampler_channels(), (std::vector<int>{8, 4, 16, 64, 256}));
  // A derived size that disagrees with the config is an error naming it.
  nlohmann::json j = nlohmann::json::parse(fixture_config_text());
  j["derived"]["token_grid"] = {13, 13};
  expect_error([&] { verify::parse_fixture_config(j.dump(), "edited.json"); }, "derived size 'token_grid'");
  j = nlohmann::json::parse(fixture_config_text());
  j["reduced_vs_official"]["bogus_knob"] = {{"reduced", 1}, {"official", 2}};
  expect_error([&] { verify::parse_fixture_config(j.dump(), "edited.json"); }, "unknown config field 'bogus_knob'");
}

// The product reads flat configs only: a fixture's config.json is refused with the command that
// converts it, and the converted config is the one verification reads.
TEST(Config, AFixtureConfigIsRefusedWithTheCommandThatConvertsIt) {
  expect_error([] { load_config(kFixture + "/config.json"); }, "is a fixture's config.json");
  expect_error([] { parse_config(fixture_config_text(), "config.json"); },
               "convert it with `segmux fixture-config config.json -o model_config.json`");
  const ModelConfig fixture = verify::load_fixture_config(kFixture + "/config.json");
  EXPECT_EQ(config_to_json(parse_config(config_to_json(fixture), "converted")), config_to_json(fixture));
  EXPECT_EQ(config_to_json(verify::load_model_or_fixture_config(kFixture + "/config.json")), config_to_json(fixture));
}

TEST(Config, FlatJsonSubsetsAndErrors) {
  ModelConfig c = parse_config(R"({"image_size": 336, "vit_global": [0, 2], "name": "small"})", "flat");
  EXPECT_EQ(c.image_size, 336);
  EXPECT_EQ(c.vit_global, (std::vector<int>{0, 2}));
  EXPECT_EQ(c.vit_dim, 1024);  // untouched fields keep the full-size default
  expect_error([] { parse_config(R"({"image_sise": 336})", "flat"); }, "unknown config field 'image_sise'");
  expect_error([] { parse_config(R"({"d_model": "256"})", "flat"); }, "field 'd_model' must be an integer");
  expect_error([] { parse_config(R"({"vit_mlp_ratio": [1]})", "flat"); }, "field 'vit_mlp_ratio' must be a number");
  expect_error([] { parse_config(R"([1, 2])", "flat"); }, "must be a JSON object");
  expect_error([] { parse_config(R"({"image_size": )", "flat"); }, "not valid JSON");
  expect_error([] { parse_config(R"({"vit_heads": 10})", "flat"); }, "vit_dim 1024 is not divisible by vit_heads 10");
  expect_error([] { parse_config(R"({"image_size": 1000})", "flat"); },
               "image_size 1000 is not a multiple of patch_size 14");
  expect_error([] { parse_config(R"({"vit_global": [40]})", "flat"); }, "vit_global block 40");
  expect_error([] { parse_config(R"({"d_model": 0})", "flat"); }, "d_model must be positive");
  expect_error([] { load_config("/nonexistent/config.json"); },
               "config file: cannot open '/nonexistent/config.json': No such file");
  // Every field survives a round trip through our flat JSON.
  const ModelConfig tiny = verify::load_fixture_config(kFixture + "/config.json");
  EXPECT_EQ(config_to_json(parse_config(config_to_json(tiny), "roundtrip")), config_to_json(tiny));
  EXPECT_EQ(parse_config(config_to_json(tiny), "roundtrip").vit_global, tiny.vit_global);
}
