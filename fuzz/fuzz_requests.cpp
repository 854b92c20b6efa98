// libFuzzer target: official request JSON (`segmux track --requests`, `segmux serve`'s POST
// /api/request) through the untrusted-JSON parser and the request checks: any bytes give requests or
// a segmux::Error naming the request, never a crash or a raw library exception. Mask prompts
// ("object_mask", service/mask_request.h) go through the same checks.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/json_limits.h"
#include "io_seeds.h"
#include "service/official_request.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    return std::vector<std::string>{
        R"([{"type": "add_prompt", "frame_index": 0, "text": "dog", "output_prob_thresh": 0.5},
            {"type": "propagate_in_video", "propagation_direction": "both", "start_frame_index": 0,
             "max_frame_num_to_track": 10},
            {"type": "remove_object", "obj_id": 2, "frame_index": 5}, {"type": "reset_session"}])",
        R"({"requests": [{"type": "add_prompt", "session_id": "s", "frame_index": 3, "text": "a cat"}]})",
        R"([{"type": "add_prompt", "frame_index": 1, "obj_id": 0, "points": [[0.5, 0.5]], "point_labels": [1]},
            {"type": "add_prompt", "frame_index": 0, "text": "x", "bounding_boxes": [[0.1, 0.1, 0.2, 0.2]],
             "bounding_box_labels": [0]}])",
        // A mask prompt (segmux extension, service/mask_request.h): COCO runs of a 3 x 4 mask.
        R"([{"type": "add_prompt", "frame_index": 2, "obj_id": 4,
             "object_mask": {"size": [3, 4], "counts": [1, 2, 9]}}])",
    };
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    nlohmann::json j = segmux::parse_untrusted_json(text, "fuzz requests", {.max_depth = 16});
    const nlohmann::json& list = j.is_object() && j.contains("requests") ? j["requests"] : j;
    if (!list.is_array()) return 0;
    bool have_prompt = false;
    int index = 0;
    for (const nlohmann::json& r : list) {
      const segmux::service::OfficialRequest q =
          segmux::service::parse_official_request(r, "request " + std::to_string(index++), 16, have_prompt);
      if (q.name.empty() || q.frame_index < 0 || q.frame_index >= 16) __builtin_trap();
    }
  } catch (const segmux::Error&) {
  }
  return 0;
}
