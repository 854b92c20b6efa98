// The written contracts: derived from the built graphs (names, order, shapes, dtypes), described by
// hand only where the graph is silent. One test per candidate builds its graph and renders its contract
// (which fails when the graph and the contract or the candidate table disagree); docs/contracts/<name>.md
// holds the contract of the full-size configuration verbatim.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/error_text.h"
#include "core/error.h"
#include "ir/builder.h"
#include "models/sam31/backbone.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/detector.h"
#include "models/sam31/text_encoder.h"
#include "models/sam31/weights.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::sam31 {
namespace {

const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

using segmux::test::error_of;

// A two-input, one-output graph: a (f32 [2, 3]) + b (f32 [2, 3]) -> sum, and a flag input.
ir::Graph small_graph() {
  ir::Graph g;
  ir::GraphBuilder b(g);
  int a = b.input("a", DType::f32, {2, 3});
  int flag = b.input("flag", DType::boolean, {1});
  (void)flag;
  b.output(b.op1("Add", {a, a}), "sum");
  return g;
}

contract::Description small_description() {
  contract::Description d;
  d.summary = "A test graph.";
  d.inputs["a"] = {"the addend", "caller"};
  d.inputs["flag"] = {"unused", "caller"};
  d.outputs["sum"] = {"a + a", "test"};
  return d;
}

TEST(Contracts, RowsComeFromTheGraphInGraphOrder) {
  const std::string md = contract::markdown("small", small_description(), small_graph());
  EXPECT_NE(md.find("| `a` | [2, 3] | f32 | the addend | caller |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `flag` | [1] | bool | unused | caller |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `sum` | [2, 3] | f32 | a + a | test |"), std::string::npos) << md;
  EXPECT_LT(md.find("`a`"), md.find("`flag`"));
}

TEST(Contracts, AGraphPortWithoutDescriptionIsAnError) {
  contract::Description d = small_description();
  d.outputs.erase("sum");
  EXPECT_NE(error_of([&] { contract::markdown("small", d, small_graph()); }).find("output 'sum' has no description"),
            std::string::npos);
}

TEST(Contracts, ADescribedPortTheGraphLacksIsAnError) {
  contract::Description d = small_description();
  d.inputs["b"] = {"not there", "nobody"};
  EXPECT_NE(error_of([&] {
              contract::markdown("small", d, small_graph());
            }).find("describes input 'b' that the graph does not have"),
            std::string::npos);
}

struct TinyModel {
  ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
};

TinyModel& tiny() {
  static TinyModel m;
  return m;
}

class CandidateContract : public ::testing::TestWithParam<std::string> {
 protected:
  const Candidate& candidate() const { return *find_candidate(GetParam()); }
};

// The built graph, the candidate table and the written description agree (contract() throws otherwise).
TEST_P(CandidateContract, GraphAndContractAgree) {
  const Candidate& c = candidate();
  const ir::Graph g = c.build(tiny().cfg, tiny().w);
  std::string md;
  ASSERT_NO_THROW(md = c.contract(tiny().cfg, g));
  for (int v : g.inputs) EXPECT_NE(md.find("| `" + g.value(v).name + "` |"), std::string::npos) << g.value(v).name;
  for (int v : g.outputs) EXPECT_NE(md.find("| `" + g.value(v).name + "` |"), std::string::npos) << g.value(v).name;
}

// A graph that is not the candidate's default build (another candidate's) is refused by name.
TEST_P(CandidateContract, AnotherGraphIsRefused) {
  const Candidate& c = candidate();
  const Candidate& other = c.id == CandidateId::backbone ? sam31::candidate(CandidateId::memory_encoder)
                                                         : sam31::candidate(CandidateId::backbone);
  const ir::Graph g = other.build(tiny().cfg, tiny().w);
  EXPECT_NE(error_of([&] { c.contract(tiny().cfg, g); }).find("candidate " + c.name + ": the graph's inputs"),
            std::string::npos);
}

// Zero weights of the official full-size shapes (one shared zero buffer, no per-tensor allocation)
// for the keys with one of the given prefixes.
Weights fullsize_zero_weights(const std::vector<std::string>& prefixes, size_t max_bytes) {
  std::ifstream f(kDir + "/official_fullsize_state_dict_shapes.json");
  nlohmann::json shapes = nlohmann::json::parse(f);
  auto zeros = Storage::allocate(max_bytes);
  Weights w;
  for (auto& [key, v] : shapes.items()) {
    bool wanted = false;
    for (auto& p : prefixes) wanted = wanted || key.rfind(p, 0) == 0;
    if (!wanted || v[1].get<std::string>() != "float32") continue;
    const Shape s = v[0].get<Shape>();
    if (size_t(shape_numel(s)) * 4 > max_bytes) continue;
    w.set(key, Tensor(DType::f32, s, zeros));
  }
  return w;
}

// The candidate's default build at the full-size configuration, on zero weights. Depths and the
// vocabulary are cut where they do not change the graph's inputs and outputs (the contract's rows).
ir::Graph fullsize_graph(const Candidate& c) {
  ModelConfig cfg = default_config();
  if (c.id == CandidateId::backbone) {
    cfg.vit_depth = 2;
    cfg.vit_global = {1};
  }
  if (c.id == CandidateId::text_encoder) {
    cfg.text_layers = 1;
    cfg.vocab_size = 1000;  // the 49408-row embedding table is not needed for the shapes
  }
  Weights w = fullsize_zero_weights({"detector.", "tracker.model."}, size_t(64) << 20);
  if (c.id == CandidateId::text_encoder)
    w.set("detector.backbone.language_backbone.encoder.token_embedding.weight",
          Tensor(DType::f32, {cfg.vocab_size, cfg.text_width}));
  return c.build(cfg, w);
}

// docs/contracts/<name>.md holds the contract of the full-size configuration; when it is out of date
// the generated one is written to the build folder for copying.
TEST_P(CandidateContract, DocIsTheFullSizeContract) {
  const Candidate& c = candidate();
  const std::string md = c.contract(default_config(), fullsize_graph(c));
  std::ifstream f(std::string(SEGMUX_SOURCE_DIR) + "/docs/contracts/" + c.name + ".md");
  ASSERT_TRUE(f.good()) << "docs/contracts/" << c.name << ".md is missing";
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.find(md) == std::string::npos) {
    const std::string generated = std::string(SEGMUX_BINARY_DIR) + "/" + c.name + ".md";
    std::ofstream(generated) << md;
    ADD_FAILURE() << "docs/contracts/" << c.name << ".md is out of date (generated: " << generated << ")";
  }
}

std::vector<std::string> candidate_name_list() {
  std::vector<std::string> names;
  for (const Candidate& c : candidates()) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryCandidate, CandidateContract, ::testing::ValuesIn(candidate_name_list()),
                         [](const auto& info) { return info.param; });

Shape output_shape(const ir::Graph& g, const std::string& name) {
  for (int v : g.outputs)
    if (g.value(v).name == name) return g.value(v).shape;
  return {};
}

// Nothing is sized for the fixture: the official sizes build (shape inference only). Depths are cut
// to keep the test light; widths, grids, windows and levels are the official ones.
TEST(Contracts, FullSizeGraphsBuild) {
  const ModelConfig full = default_config();
  {
    Weights w = fullsize_zero_weights({"detector."}, size_t(64) << 20);
    ir::Graph g = build_detector(full, w);
    EXPECT_EQ(output_shape(g, "pred_masks"),
              (Shape{1, full.num_queries, full.low_res_mask_size(), full.low_res_mask_size()}));
    EXPECT_EQ(output_shape(g, "pred_logits"), (Shape{1, full.num_queries, 1}));
  }
  {
    ModelConfig cfg = full;
    cfg.vit_depth = 2;
    cfg.vit_global = {1};
    Weights w = fullsize_zero_weights({"detector.backbone.vision_backbone.", "tracker.model.sam_mask_decoder.conv_s"},
                                      size_t(64) << 20);
    ir::Graph g = build_backbone(cfg, w);
    const int64_t G = cfg.token_grid(), D = cfg.d_model;
    EXPECT_EQ(output_shape(g, "vit_trunk"), (Shape{1, cfg.vit_dim, G, G}));
    EXPECT_EQ(output_shape(g, "det_fpn0"), (Shape{1, D, 4 * G, 4 * G}));
    EXPECT_EQ(output_shape(g, "propagation_high_res_s1"), (Shape{1, D / 4, 2 * G, 2 * G}));
  }
  {
    ModelConfig cfg = full;
    cfg.text_layers = 1;
    cfg.vocab_size = 1000;  // the 49408-row embedding table is not needed to check the shapes
    Weights w = fullsize_zero_weights({"detector.backbone.language_backbone."}, size_t(64) << 20);
    w.set("detector.backbone.language_backbone.encoder.token_embedding.weight",
          Tensor(DType::f32, {cfg.vocab_size, cfg.text_width}));
    ir::Graph g = build_text_encoder(cfg, w);
    EXPECT_EQ(output_shape(g, "language_features"), (Shape{cfg.text_context_length, 3, cfg.d_model}));
  }
}

}  // namespace
}  // namespace segmux::sam31
