// A short synthetic video (coloured shapes moving over a gradient), so the README's main command
// runs on a fresh machine without downloading anything.
#pragma once
#include <string>

#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

RgbImage sample_frame(int index, int width, int height);
// Writes `frames` frames to path (.mp4, .gif, ...) at 10 fps.
void write_sample_video(const std::string& path, int frames, int width, int height);

}  // namespace segmux::pipeline
