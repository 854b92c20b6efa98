// What `segmux serve` gives the page beside the official answers (service/page_images.h) and the
// error text a client sees (ResourceStore::public_text): frames as PNG with the frame's pixels, the
// object colours of the CLI overlay in every answer that names objects, no server-side path in errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/outputs.h"
#include "pipeline/predictor/control_config.h"
#include "service/page_images.h"
#include "service/service.h"
#include "verify/sam31/fixture_config.h"

namespace fs = std::filesystem;
using nlohmann::json;
namespace pl = segmux::pipeline;
namespace sv = segmux::service;

namespace {

const std::string kTiny = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

fs::path scratch(const std::string& name) {
  fs::path p = fs::path(::testing::TempDir()) / ("segmux_page_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

TEST(PageImages, PngHoldsTheFramePixelsExactly) {
  pl::RgbFrame f;
  f.width = 37;  // odd: no row padding to hide behind
  f.height = 11;
  for (int i = 0; i < f.width * f.height * 3; ++i) f.pixels.push_back(uint8_t((i * 37) ^ (i >> 3)));
  const std::string png = sv::encode_png(f);
  ASSERT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
  const fs::path dir = scratch("png");
  const std::string path = (dir / "f.png").string();
  std::ofstream(path, std::ios::binary).write(png.data(), std::streamsize(png.size()));
  const pl::RgbImage back = pl::read_image(path);
  EXPECT_EQ(back.width, f.width);
  EXPECT_EQ(back.height, f.height);
  EXPECT_EQ(back.pixels, f.pixels);
  fs::remove_all(dir);
}

TEST(PageImages, PngOfAFlatFrameIsSmall) {  // compressed, unlike the raw bitmap it replaces
  pl::RgbFrame f;
  f.width = 640;
  f.height = 480;
  f.pixels.assign(size_t(f.width) * f.height * 3, 90);
  EXPECT_LT(sv::encode_png(f).size(), f.pixels.size() / 50);
}

TEST(PageImages, AFrameWithoutPixelsIsAnError) {
  pl::RgbFrame f;
  f.width = 4;
  f.height = 4;
  f.pixels.assign(10, 0);
  EXPECT_THROW(sv::encode_png(f), segmux::Error);
}

TEST(PageImages, ColorsAreTheOverlayColors) {
  for (int64_t id : {0, 1, 2, 7, 255, 256, 1000, 123456}) {
    const auto c = pl::id_color(id);
    char want[8];
    std::snprintf(want, sizeof want, "#%02x%02x%02x", c[0], c[1], c[2]);
    EXPECT_EQ(sv::id_color_hex(id), want) << id;
  }
  EXPECT_EQ(sv::object_colors({3, 9}), json({{"3", sv::id_color_hex(3)}, {"9", sv::id_color_hex(9)}}));
}

TEST(PublicText, ErrorsShowNoServerPath) {
  const fs::path root = scratch("paths");
  fs::create_directories(root / "allowed" / "clips");
  const std::string allowed = fs::canonical(root / "allowed").string();
  sv::ResourceStore store(allowed, 1 << 20);
  const json up = store.add_upload("my holiday.mp4", "not a video");
  const std::string file = store.resolve(up["resource_path"]);
  const std::string dir = store.upload_dir();
  EXPECT_EQ(store.public_text("cannot open '" + file + "': Invalid data"),
            "cannot open 'my holiday.mp4': Invalid data");
  EXPECT_EQ(store.public_text("tracks.json: cannot write " + dir + "/export-Ab12/tracks.json.tmp: No space"),
            "tracks.json: cannot write a temporary file of the server: No space");
  EXPECT_EQ(store.public_text("'" + file + ".tmp-1' is short"), "'a temporary file of the server' is short");
  EXPECT_EQ(store.public_text("frame 3: " + allowed + "/clips/00003.png: truncated"),
            "frame 3: clips/00003.png: truncated");
  EXPECT_EQ(store.public_text("cannot list " + allowed), "cannot list the allowed folder");
  EXPECT_EQ(store.public_text(allowed + "x/f.png"), allowed + "x/f.png");  // another folder: not ours to rename
  EXPECT_EQ(store.public_text("no path here"), "no path here");
  fs::remove_all(root);
}

// Every answer naming objects carries their colours (the page draws with them): add_prompt and each
// propagated frame, for the shown and the tracked ids.
TEST(PageAnswers, CarryTheColorOfEveryObjectTheyName) {
  const fs::path root = scratch("answers");
  fs::create_directories(root / "allowed");
  fs::copy(kTiny + "/video/frames", root / "allowed" / "frames");
  pl::ModelSource src;
  src.weights = kTiny + "/weights.safetensors";
  src.config = kTiny + "/config.json";
  src.read_config = segmux::verify::load_fixture_config;
  src.vocab = kTiny + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  src.cache_dir = (root / "cache").string();
  pl::OpenedModel model = pl::open_model(src, [](const std::string&) {});
  sv::ResourceStore store((root / "allowed").string(), 1 << 20);
  sv::RequestService svc(*model.model, segmux::verify::load_fixture_control_config(kTiny + "/config.json"), {}, store);
  const std::string id = svc.handle({{"type", "start_session"}, {"resource_path", "frames"}})["session_id"];
  auto expect_colors = [](const json& answer) {
    std::vector<int64_t> ids = answer.at("tracked_obj_ids");
    for (int64_t i : answer.at("outputs").at("out_obj_ids").get<std::vector<int64_t>>()) ids.push_back(i);
    ASSERT_FALSE(ids.empty());
    for (int64_t i : ids) EXPECT_EQ(answer.at("obj_colors").at(std::to_string(i)), sv::id_color_hex(i)) << i;
  };
  expect_colors(svc.handle({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"text", "shape"}}));
  int frames = 0;
  svc.stream({{"type", "propagate_in_video"}, {"session_id", id}, {"propagation_direction", "forward"}})(
      [&](const json& frame) {
        expect_colors(frame);
        return ++frames < 3;
      });
  EXPECT_EQ(frames, 3);
  svc.close_all();
  fs::remove_all(root);
}

}  // namespace
