// The C API tests' view of a session's outputs: each segmux_frame copied (it lives only as long as the
// call that gives it), propagations collected, and two runs compared output by output.
#pragma once
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <cstdint>
#include <string>
#include <vector>

namespace segmux::test {

struct FrameCopy {
  int index = -1;
  std::vector<int64_t> ids;
  std::vector<float> scores, boxes;
  std::vector<std::vector<uint8_t>> masks;
  bool operator==(const FrameCopy&) const = default;
};

inline FrameCopy copy_frame(const segmux_frame* f) {
  FrameCopy o;
  o.index = segmux_frame_index(f);
  const size_t n = segmux_frame_num_objects(f), px = size_t(segmux_frame_width(f)) * size_t(segmux_frame_height(f));
  o.ids.assign(segmux_frame_obj_ids(f), segmux_frame_obj_ids(f) + n);
  o.scores.assign(segmux_frame_scores(f), segmux_frame_scores(f) + n);
  o.boxes.assign(segmux_frame_boxes_xywh(f), segmux_frame_boxes_xywh(f) + 4 * n);
  for (size_t k = 0; k < n; ++k) o.masks.emplace_back(segmux_frame_mask(f, k), segmux_frame_mask(f, k) + px);
  return o;
}

// A frame the caller owns (add_prompt's, next_frame's): copied, then freed.
inline FrameCopy take_frame(segmux_frame* f) {
  FrameCopy o = copy_frame(f);
  segmux_frame_free(f);
  return o;
}

// Every frame one propagation calls back (options may be null: the defaults).
inline std::vector<FrameCopy> propagate(segmux_session* s, const segmux_propagate_options* options = nullptr) {
  std::vector<FrameCopy> outs;
  EXPECT_EQ(segmux_session_propagate(
                s, options,
                [](void* user, const segmux_frame* f) {
                  static_cast<std::vector<FrameCopy>*>(user)->push_back(copy_frame(f));
                  return 1;
                },
                &outs),
            SEGMUX_OK)
      << segmux_last_error();
  return outs;
}

// The same outputs to the bit: frame order, ids, scores, boxes and masks.
inline void expect_same(const std::vector<FrameCopy>& got, const std::vector<FrameCopy>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].index, want[i].index) << what << ", output " << i;
    EXPECT_EQ(got[i].ids, want[i].ids) << what << ", frame " << want[i].index;
    EXPECT_EQ(got[i].scores, want[i].scores) << what << ", frame " << want[i].index;
    EXPECT_EQ(got[i].boxes, want[i].boxes) << what << ", frame " << want[i].index;
    EXPECT_TRUE(got[i].masks == want[i].masks) << what << ", frame " << want[i].index << ": masks differ";
  }
}

inline size_t objects_in(const std::vector<FrameCopy>& outs) {
  size_t n = 0;
  for (const auto& o : outs) n += o.ids.size();
  return n;
}

inline segmux_prompt text_prompt(int frame, const char* text = "shape") {
  segmux_prompt p;
  segmux_prompt_init(&p);
  p.frame_index = frame;
  p.text = text;
  return p;
}

inline segmux_propagate_options forward_from(int start) {
  segmux_propagate_options o;
  segmux_propagate_options_init(&o);
  o.direction = SEGMUX_FORWARD;
  o.start_frame_index = start;
  return o;
}

}  // namespace segmux::test
