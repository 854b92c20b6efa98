// The pipeline tests' session on the official replayed run: the sam31-tiny fixture's recorded model
// outputs (ReplayModel) behind a VideoSession on a blank video of the fixture's frame count and size.
#pragma once
#include <fstream>
#include <memory>
#include <string>

#include "pipeline/media/frame_source.h"
#include "pipeline/predictor/session_api.h"
#include "verify/replay_backend.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::test {

struct ReplayedSession {
  explicit ReplayedSession(const std::string& fixture_dir)
      : fixture(fixture_dir),
        model(verify::ReplayModel::from_fixture(fixture)),
        video(pipeline::make_blank_frame_source(16, 320, 240)),
        session(model, *video, verify::load_fixture_control_config(fixture + "/config.json")) {}
  ReplayedSession(const ReplayedSession&) = delete;  // the session holds the model and the video
  ReplayedSession& operator=(const ReplayedSession&) = delete;

  const std::string fixture;
  verify::ReplayModel model;
  std::unique_ptr<pipeline::FrameSource> video;
  pipeline::VideoSession session;
};

// Null when the fixture's trace is not there: the test skips.
inline std::unique_ptr<ReplayedSession> replayed_session() {
  const std::string fixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  if (!std::ifstream(fixture + "/video/trace.json").good()) return nullptr;
  return std::make_unique<ReplayedSession>(fixture);
}

}  // namespace segmux::test
