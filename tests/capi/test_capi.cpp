// The C API's boundary (include/segmux/segmux.h) without a model: versions, errors as statuses with
// messages, the live frame source. The fixture runs are in tests/capi_tracking (SLOW).
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "pipeline/media/live_source.h"

namespace {

// A scratch folder removed at the end of the test.
struct Scratch {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("capi_" + std::to_string(::getpid()));
  Scratch() { std::filesystem::create_directories(dir); }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name, const std::string& bytes) const {
    std::ofstream((dir / name).string(), std::ios::binary) << bytes;
    return (dir / name).string();
  }
};

segmux_status open_checkpoint(const std::string& path) {
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  mo.checkpoint = path.c_str();
  segmux_model* m = nullptr;
  const segmux_status st = segmux_model_open(&mo, &m);
  EXPECT_EQ(m, nullptr);
  return st;
}

}  // namespace

TEST(CApi, VersionIsTheProjectVersion) {
  EXPECT_STREQ(segmux_version(), SEGMUX_VERSION_STRING);
  EXPECT_EQ(std::to_string(SEGMUX_VERSION_MAJOR) + "." + std::to_string(SEGMUX_VERSION_MINOR) + "." +
                std::to_string(SEGMUX_VERSION_PATCH),
            SEGMUX_VERSION_STRING);
}

TEST(CApi, BadArgumentsAreStatusesWithMessages) {
  segmux_model* m = nullptr;
  EXPECT_EQ(segmux_model_open(nullptr, &m), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("NULL"), std::string::npos);
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_INVALID_ARGUMENT);  // neither folder nor checkpoint
  EXPECT_NE(std::string(segmux_last_error()).find("model_dir"), std::string::npos);
  mo.model_dir = "/nonexistent/segmux-model";
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(segmux_last_error()).find("/nonexistent/segmux-model"), std::string::npos);
  EXPECT_EQ(m, nullptr);
  mo.struct_size = 8;  // a caller built against a different header
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_propagate(nullptr, nullptr, nullptr, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_next_frame(nullptr, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(segmux_status_name(SEGMUX_ERROR_BUSY), "SEGMUX_ERROR_BUSY");
  EXPECT_EQ(segmux_model_close(nullptr), SEGMUX_OK);
  segmux_session_close(nullptr);
  segmux_frame_free(nullptr);
  EXPECT_EQ(segmux_frame_index(nullptr), -1);
  EXPECT_EQ(segmux_frame_num_objects(nullptr), 0u);
  EXPECT_EQ(segmux_frame_mask(nullptr, 0), nullptr);
  EXPECT_EQ(segmux_frame_clone(nullptr), nullptr);
  const int64_t* counts = nullptr;
  size_t n = 0;
  EXPECT_EQ(segmux_frame_mask_rle(nullptr, 0, &counts, &n), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_open_live(nullptr, 4, 4, 0, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  // The message is per thread and cleared by the next successful call.
  std::string other_thread;
  std::thread([&] { other_thread = segmux_last_error(); }).join();
  EXPECT_EQ(other_thread, "");
  EXPECT_STRNE(segmux_last_error(), "");
  EXPECT_EQ(segmux_model_close(nullptr), SEGMUX_OK);
  EXPECT_STREQ(segmux_last_error(), "");
}

TEST(LiveFrameSource, HoldsTheLastFramesAndChecksSizes) {
  segmux::pipeline::LiveFrameSource src(2, 1, 2);
  EXPECT_EQ(src.num_frames(), 0);
  const uint8_t a[8] = {1, 2, 3, 4, 5, 6, 0, 0}, b[6] = {7, 8, 9, 10, 11, 12};
  EXPECT_EQ(src.push(a, 2, 1, 8), 0);  // stride beyond the row
  EXPECT_EQ(src.push(b, 2, 1, 0), 1);
  EXPECT_EQ(src.push(b, 2, 1, 0), 2);
  EXPECT_EQ(src.num_frames(), 3);
  EXPECT_EQ(src.frame(1).pixels, std::vector<uint8_t>(b, b + 6));
  EXPECT_THROW(src.frame(0), segmux::Error);          // dropped
  EXPECT_THROW(src.frame(3), segmux::Error);          // not pushed yet
  EXPECT_THROW(src.push(b, 2, 1, 3), segmux::Error);  // stride shorter than a row
  EXPECT_THROW(src.push(nullptr, 2, 1, 0), segmux::Error);
  EXPECT_THROW(segmux::pipeline::LiveFrameSource(0, 1, 1), segmux::Error);
  EXPECT_THROW(segmux::pipeline::LiveFrameSource(1 << 20, 1 << 20, 1), segmux::Error);
}

// Failures have distinct statuses by kind (the values of the first five never change).
TEST(CApi, FailuresHaveStatusesByKind) {
  EXPECT_EQ(int(SEGMUX_ERROR_INVALID_ARGUMENT), -1);
  EXPECT_EQ(int(SEGMUX_ERROR_FAILED), -2);
  EXPECT_EQ(int(SEGMUX_ERROR_BUSY), -3);
  EXPECT_EQ(int(SEGMUX_ERROR_OUT_OF_MEMORY), -4);
  EXPECT_EQ(int(SEGMUX_ERROR_INTERNAL), -5);
  for (segmux_status st :
       {SEGMUX_ERROR_NOT_FOUND, SEGMUX_ERROR_CORRUPT_FILE, SEGMUX_ERROR_UNSUPPORTED, SEGMUX_ERROR_IO})
    EXPECT_EQ(std::string(segmux_status_name(st)).rfind("SEGMUX_ERROR_", 0), 0u) << int(st);
  Scratch tmp;
  // Absent: NOT_FOUND, naming the file.
  EXPECT_EQ(open_checkpoint((tmp.dir / "absent.pt").string()), SEGMUX_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(segmux_last_error()).find("absent.pt"), std::string::npos) << segmux_last_error();
  // Not a checkpoint: CORRUPT_FILE, saying what it is.
  EXPECT_EQ(open_checkpoint(tmp.file("image.pt", "\x89PNG\r\n\x1a\n0000")), SEGMUX_ERROR_CORRUPT_FILE);
  EXPECT_NE(std::string(segmux_last_error()).find("a PNG image"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(open_checkpoint(tmp.file("one-byte.pt", "x")), SEGMUX_ERROR_CORRUPT_FILE);
  EXPECT_EQ(open_checkpoint(tmp.file("empty.safetensors", "")), SEGMUX_ERROR_CORRUPT_FILE);
  // A legacy (non-zip) torch.save pickle: UNSUPPORTED.
  EXPECT_EQ(open_checkpoint(tmp.file("legacy.pt", std::string("\x80\x02\x8a\x0a", 4))), SEGMUX_ERROR_UNSUPPORTED);
  // A folder or a FIFO where a file belongs: INVALID_ARGUMENT, at once (a FIFO is never opened).
  EXPECT_EQ(open_checkpoint(tmp.dir.string()), SEGMUX_ERROR_INVALID_ARGUMENT);
  const std::string fifo = (tmp.dir / "fifo.pt").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(open_checkpoint(fifo), SEGMUX_ERROR_INVALID_ARGUMENT);
  // A model folder without model.json: NOT_FOUND; one whose model.json does not load: CORRUPT_FILE.
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  const std::string dir = tmp.dir.string();
  mo.model_dir = dir.c_str();
  segmux_model* m = nullptr;
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(segmux_last_error()).find("model.json"), std::string::npos) << segmux_last_error();
  tmp.file("model.json", "{\"not\": \"a model\"}");
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_CORRUPT_FILE) << segmux_last_error();
  EXPECT_EQ(m, nullptr);
}

// Pointers that are not live handles (never given out, or closed / freed already) are refused with a
// status, never followed: no crash, no double free.
TEST(CApi, StaleAndForeignHandlesAreRefused) {
  alignas(64) unsigned char junk[4096] = {};
  auto* model = reinterpret_cast<segmux_model*>(junk);
  auto* session = reinterpret_cast<segmux_session*>(junk);
  auto* frame = reinterpret_cast<segmux_frame*>(junk);
  EXPECT_EQ(segmux_model_close(model), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("not an open segmux_model"), std::string::npos)
      << segmux_last_error();
  segmux_session* s = nullptr;
  EXPECT_EQ(segmux_session_open_video(model, "video.mp4", &s), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_open_live(model, 4, 4, 0, &s), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_frame* f = nullptr;
  EXPECT_EQ(segmux_session_next_frame(session, &f), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("not an open segmux_session"), std::string::npos)
      << segmux_last_error();
  EXPECT_EQ(segmux_session_cancel(session), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_reset(session), SEGMUX_ERROR_INVALID_ARGUMENT);
  int n = 0;
  EXPECT_EQ(segmux_session_info(session, &n, nullptr, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_prompt p;
  segmux_prompt_init(&p);
  EXPECT_EQ(segmux_session_add_prompt(session, &p, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_session_close(session);  // ignored
  EXPECT_EQ(segmux_frame_index(frame), -1);
  EXPECT_EQ(segmux_frame_num_objects(frame), 0u);
  EXPECT_EQ(segmux_frame_mask(frame, 0), nullptr);
  EXPECT_EQ(segmux_frame_prompt(frame, 0), nullptr);
  EXPECT_EQ(segmux_frame_clone(frame), nullptr);
  const int64_t* counts = nullptr;
  size_t nc = 0;
  EXPECT_EQ(segmux_frame_mask_rle(frame, 0, &counts, &nc), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_frame_free(frame);  // ignored
  segmux_image_prompt ip;
  segmux_image_prompt_init(&ip);
  EXPECT_EQ(ip.threshold, 0.5f);
  EXPECT_EQ(segmux_model_segment_file(model, "image.png", &ip, &f), SEGMUX_ERROR_INVALID_ARGUMENT);
  for (unsigned char b : junk) ASSERT_EQ(b, 0);  // nothing was written through the stale pointers
}
