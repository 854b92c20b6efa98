// `segmux serve`'s predict_image request (service/image_request.h) on the fixtures' tiny model: the
// official SAM-1-style predictor's answer for a click (tests/fixtures/sam31-tiny-sam1), its low-res
// logits fed back as the next request's mask_input, and 400s naming the problem for bad requests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "deploy/model_store/model_store.h"
#include "io/safetensors.h"
#include "pipeline/predictor/control_config.h"
#include "service/service.h"
#include "verify/sam31/fixture_config.h"

namespace fs = std::filesystem;
using nlohmann::json;
namespace pl = segmux::pipeline;

namespace {

const std::string kSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-sam1";

class PredictImage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSet + "/cases.json")) GTEST_SKIP() << "sam31-tiny-sam1 fixtures not found";
    root_ = fs::path(::testing::TempDir()) / ("segmux_predict_image_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "allowed");
    fs::copy_file(kSet + "/images/frame00.png", root_ / "allowed" / "frame00.png");
    pl::ModelSource src;
    src.weights = kSet + "/weights.safetensors";
    src.config = kSet + "/config.json";
    src.read_config = segmux::verify::load_fixture_config;
    src.vocab = kSet + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
    src.cache_dir = (root_ / "cache").string();
    model_ = std::make_unique<pl::OpenedModel>(pl::open_model(src, [](const std::string&) {}));
    store_ = std::make_unique<segmux::service::ResourceStore>((root_ / "allowed").string(), 1 << 20);
    svc_ = std::make_unique<segmux::service::RequestService>(
        *model_->model, segmux::verify::load_fixture_control_config(kSet + "/config.json"),
        segmux::service::ServiceLimits{}, *store_);
  }
  void TearDown() override {
    svc_.reset();
    store_.reset();
    model_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  int status_of(const json& r) {
    try {
      svc_->handle(r);
    } catch (const segmux::service::ServiceError& e) {
      message_ = e.what();
      return e.status;
    }
    return 0;
  }
  fs::path root_;
  std::unique_ptr<pl::OpenedModel> model_;
  std::unique_ptr<segmux::service::ResourceStore> store_;
  std::unique_ptr<segmux::service::RequestService> svc_;
  std::string message_;
};

}  // namespace

TEST_F(PredictImage, AnswersAsTheOfficialPredictorAndTakesItsLogitsBack) {
  const segmux::TensorFile ref = segmux::read_safetensors(kSet + "/cases/frame00_point_multimask.safetensors");
  json a = svc_->handle({{"type", "predict_image"},
                         {"resource_path", "frame00.png"},
                         {"point_coords", {{163, 79}}},
                         {"point_labels", {1}},
                         {"multimask_output", true}});
  ASSERT_EQ(a["scores"].size(), 3u);
  ASSERT_EQ(a["masks"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(a["scores"][i].get<double>(), ref.at("out.scores").data<float>()[i], 2e-4);
  EXPECT_EQ(a["width"], 320);
  const json feed = a["low_res_logits"][a["best"].get<size_t>()];
  const segmux::TensorFile ref2 = segmux::read_safetensors(kSet + "/cases/frame00_refine_mask_input.safetensors");
  json b = svc_->handle({{"type", "predict_image"},
                         {"resource_path", "frame00.png"},
                         {"point_coords", {{163, 79}, {150, 60}}},
                         {"point_labels", {1, 1}},
                         {"mask_input", feed},
                         {"multimask_output", false}});
  ASSERT_EQ(b["scores"].size(), 1u);
  EXPECT_NEAR(b["scores"][0].get<double>(), ref2.at("out.scores").data<float>()[0], 2e-4);
}

TEST_F(PredictImage, BadRequestsAreRefusedNamingTheProblem) {
  const json base = {{"type", "predict_image"}, {"resource_path", "frame00.png"}};
  json r = base;
  r["point_coords"] = {{10, 10}};
  r["point_labels"] = {1, 0};
  EXPECT_EQ(status_of(r), 400);
  EXPECT_NE(message_.find("1 points but 2 labels"), std::string::npos) << message_;
  r = base;
  r["box"] = {0, 0, 999, 10};
  EXPECT_EQ(status_of(r), 400);
  EXPECT_NE(message_.find("outside"), std::string::npos) << message_;
  r = base;
  r["mask_input"] = {{1, 2}, {3, 4}};
  EXPECT_EQ(status_of(r), 400);
  EXPECT_NE(message_.find("mask_input must be"), std::string::npos) << message_;
  r = base;
  r["pointz"] = 1;
  EXPECT_EQ(status_of(r), 400);
  EXPECT_NE(message_.find("unknown field 'pointz'"), std::string::npos) << message_;
  EXPECT_EQ(status_of(base), 400);  // no prompt
  EXPECT_NE(message_.find("no prompt"), std::string::npos) << message_;
  r = base;
  r["resource_path"] = "../outside.png";
  r["point_coords"] = {{10, 10}};
  r["point_labels"] = {1};
  EXPECT_NE(status_of(r), 0);
}
