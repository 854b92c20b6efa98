// The C API's boundary (include/segmux/segmux.h) without a model: versions, errors as statuses with
// messages, the live frame source. The fixture runs are in tests/capi_tracking (SLOW).
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "pipeline/media/live_source.h"

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
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_FAILED);
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
