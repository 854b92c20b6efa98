// Rotation metadata of videos (phones record sideways and store how to turn the frames upright: an
// MP4/MOV display matrix, or the older "rotate" tag). Frames are turned upright when decoded, so every
// coordinate segmux writes refers to the upright frames and the overlay needs no metadata.
// Only quarter turns are honoured (what cameras write); a mirrored matrix is read for its rotation.
#pragma once
#include <cstdint>

#include "pipeline/media/frame_source.h"

namespace segmux::pipeline {

// The clockwise angle (0, 90, 180 or 270) that turns decoded frames upright, from a 3x3 display
// matrix (libav's AV_PKT_DATA_DISPLAYMATRIX; nullptr if none) or else a "rotate" tag (degrees
// clockwise, as phones and older FFmpeg write it; nullptr if none). 0 when neither says otherwise.
int upright_rotation(const int32_t* display_matrix, const char* rotate_tag);

// The image turned clockwise by 0, 90, 180 or 270 degrees.
RgbFrame rotate_clockwise(const RgbFrame& img, int degrees);

}  // namespace segmux::pipeline
