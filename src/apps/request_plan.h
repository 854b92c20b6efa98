// Progress planning for `segmux track --requests`: how many frame outputs a list of requests delivers.
#pragma once
#include <vector>

#include "apps/track_requests.h"

namespace segmux::apps {

// Frame outputs the requests deliver (add_prompt answers, remove_object answers of propagated frames
// counted as at most one each, and every propagated frame), frames delivered again included.
int planned_outputs(const std::vector<TrackRequest>& requests, int num_frames);

}  // namespace segmux::apps
