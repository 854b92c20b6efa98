#include "apps/request_plan.h"

#include <algorithm>

namespace segmux::apps {

int planned_outputs(const std::vector<TrackRequest>& requests, int num_frames) {
  using Type = TrackRequest::Type;
  int total = 0, first_prompt = -1;
  for (const TrackRequest& q : requests) {
    if (q.type == Type::AddPrompt) {
      ++total;
      first_prompt = first_prompt < 0 ? q.frame_index : std::min(first_prompt, q.frame_index);
    } else if (q.type == Type::RemoveObject) {
      ++total;
    } else if (q.type == Type::ResetSession) {
      first_prompt = -1;
    } else if (q.type == Type::Propagate) {
      const int start = q.start_frame_index.value_or(std::max(first_prompt, 0));
      const int max = q.max_frame_num_to_track.value_or(num_frames);
      if (q.direction != pipeline::PropagationDirection::Backward) total += std::min(max + 1, num_frames - start);
      if (q.direction != pipeline::PropagationDirection::Forward) total += std::min(max, start);
    }
  }
  return total;
}

}  // namespace segmux::apps
