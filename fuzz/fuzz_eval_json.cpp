// libFuzzer target: the JSON inputs of `segmux eval` (pipeline/outputs/eval_inputs.h): a segmux
// tracks.json, YTVIS annotations and YTVIS results lists, as ground truth or predictions from anyone.
// Properties, for any bytes:
//  - load_mask_video and load_ytvis_videos give videos or a segmux::Error with a valid UTF-8 message,
//    never a crash, a raw library exception or an allocation beyond the input's size;
//  - a loaded video is consistent: a positive size, frames ascending and unique, every mask of the
//    video's size with runs that cover it exactly;
//  - a small video evaluated against itself (objects paired by id) scores J = F = 1 for every object.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "io/printable.h"
#include "io/safetensors.h"
#include "io_seeds.h"
#include "pipeline/outputs/eval_inputs.h"

using namespace segmux::pipeline;

namespace {

constexpr int64_t kMaxEvalPixels = int64_t(1) << 18;  // evaluating a video only below this (pixels x frames x objects)

std::string scratch_path() { return "/tmp/segmux_fuzz_eval_json_" + std::to_string(::getpid()) + ".json"; }

void check_error(const segmux::Error& e) {
  if (!segmux::is_valid_utf8(e.what())) __builtin_trap();
}

void check_video(const MaskVideo& v) {
  if (v.width <= 0 || v.height <= 0) __builtin_trap();
  if (!std::is_sorted(v.frames.begin(), v.frames.end()) ||
      std::adjacent_find(v.frames.begin(), v.frames.end()) != v.frames.end())
    __builtin_trap();
  const int64_t pixels = int64_t(v.width) * v.height;
  for (const auto& [id, masks] : v.objects)
    for (const auto& [frame, rle] : masks) {
      if (rle.width != v.width || rle.height != v.height) __builtin_trap();
      int64_t total = 0;
      for (int64_t c : rle.counts) {
        if (c < 0 || c > pixels) __builtin_trap();
        total += c;
      }
      if (total != pixels) __builtin_trap();
    }
  const int64_t work =
      pixels * int64_t(std::max<size_t>(v.frames.size(), 1)) * int64_t(std::max<size_t>(v.objects.size(), 1));
  if (v.frames.empty() || v.objects.empty() || work > kMaxEvalPixels) return;
  const VideoScores s = evaluate_video(v, v, EvalOptions{.matching = ObjectMatching::ids});
  for (const ObjectScore& o : s.objects)
    if (o.pred_id != o.gt_id || o.j.mean != 1.0 || o.f.mean != 1.0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    return std::vector<std::string>{
        // The layouts of tests/outputs/test_eval_metrics.cpp: YTVIS annotations and results.
        R"({"videos": [{"id": 3, "width": 4, "height": 3, "length": 2}],
            "annotations": [{"id": 1, "video_id": 3, "category_id": 2,
                             "segmentations": [{"size": [3, 4], "counts": [0, 3, 9]}, null]}]})",
        R"([{"video_id": 3, "category_id": 2, "score": 0.9,
             "segmentations": [{"size": [3, 4], "counts": [0, 6, 6]}, null]}])",
        R"({"videos": [{"id": 1, "width": 4, "height": 3, "file_names": ["a.jpg"]},
                       {"id": 2, "width": 4, "height": 3, "length": 1}],
            "annotations": [{"id": 1, "video_id": 1, "category_id": 1, "segmentations": [{"size": [3, 4], "counts": "03;"}]},
                            {"id": 2, "video_id": 2, "category_id": 1, "segmentations": [{"size": [3, 4], "counts": [0, 3, 9]}]}]})",
        R"([{"video_id": 1, "score": 1, "segmentations": [null]}, {"video_id": 2, "score": 1, "segmentations": [null]}])",
        // A segmux tracks.json (format, size, frames of objects with RLE masks, scores and prompts).
        R"({"format": "segmux-tracks-2", "width": 4, "height": 3, "prompts": ["dog", "cat"],
            "frames": [{"frame_index": 0, "objects": [{"id": 1, "prompt": "cat", "score": 0.5,
                                                       "mask_rle": {"size": [3, 4], "counts": [0, 12]}}]},
                       {"frame_index": 2, "objects": [{"id": 1, "score": 0.7, "mask_rle": {"size": [3, 4], "counts": "52"}},
                                                      {"id": 4, "prompt": "dog", "mask_rle": {"size": [3, 4], "counts": [12]}}]}]})",
        R"({"format": "segmux-tracks-1", "width": 2, "height": 2, "prompt": "x",
            "frames": [{"frame_index": 5, "objects": []}]})",
        // A polygon (refused with a readable error).
        R"({"videos": [{"id": 1, "width": 8, "height": 8, "length": 1}],
            "annotations": [{"id": 1, "video_id": 1, "segmentations": [[[0, 0, 4, 0, 4, 4]]]}]})",
    };
  });
  std::atexit([] { std::remove(scratch_path().c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = scratch_path();  // the loaders take paths: one scratch file per process
  segmux::write_file_atomic(path, data, size);
  try {
    check_video(load_mask_video(path));
  } catch (const segmux::Error& e) {
    check_error(e);
  }
  try {
    for (const auto& [id, video] : load_ytvis_videos(path)) check_video(video);
  } catch (const segmux::Error& e) {
    check_error(e);
  }
  return 0;
}
