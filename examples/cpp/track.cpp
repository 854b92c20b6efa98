// Tracks every object matching a text prompt through a video with the segmux C++ wrapper
// (segmux/segmux.hpp, header-only over the C API), pulling frames one at a time; then replays the
// video as a live stream (frames pushed one by one) and tracks each frame as it arrives.
//
//   track_cpp MODEL_DIR VIDEO PROMPT
//   track_cpp --checkpoint WEIGHTS CONFIG VOCAB VIDEO PROMPT
#include <segmux/segmux.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

void print(const segmux::FrameView& f) {
  std::printf("frame %d:", f.index());
  for (size_t k = 0; k < f.size(); ++k) {
    size_t area = 0;
    for (size_t i = 0; i < size_t(f.width()) * size_t(f.height()); ++i) area += f.mask(k)[i];
    std::printf(" [id %lld score %.3f area %zu rle %zu runs]", static_cast<long long>(f.obj_id(k)), f.score(k), area,
                f.mask_rle(k).size());
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  segmux::Model::Options opt;
  std::string video, text;
  if (argc == 4) {
    opt.model_dir(argv[1]);
    video = argv[2];
    text = argv[3];
  } else if (argc == 7 && std::strcmp(argv[1], "--checkpoint") == 0) {
    opt.checkpoint(argv[2]).config(argv[3]).vocab(argv[4]);
    video = argv[5];
    text = argv[6];
  } else {
    std::fprintf(
        stderr, "usage: track_cpp MODEL_DIR VIDEO PROMPT | track_cpp --checkpoint WEIGHTS CONFIG VOCAB VIDEO PROMPT\n");
    return 2;
  }
  try {
    std::printf("segmux %s\n", segmux::version().c_str());
    segmux::Model model(opt);
    int frames = 0, width = 0, height = 0;
    {
      segmux::Session session = model.open_video(video);
      segmux::Frame first = session.add_text_prompt(0, text);
      std::printf("prompt: %zu objects on frame 0\n", first.size());
      width = first.width();
      height = first.height();
      session.begin({SEGMUX_FORWARD, 0, -1});
      segmux_frame* f = nullptr;
      while (session.next(&f)) {
        segmux::Frame frame(f);
        print(frame);
        ++frames;
      }
    }
    std::printf("%d frames tracked\n", frames);

    // Live: grey frames of the video's size pushed one at a time (a camera would push real ones).
    segmux::Session live = model.open_live(width, height);
    std::vector<uint8_t> grey(size_t(width) * size_t(height) * 3, 128);
    int live_frames = 0;
    for (int t = 0; t < 3; ++t) {
      const int index = live.push_frame(grey.data(), width, height);
      if (index == 0) {
        live.add_text_prompt(0, text);
        continue;
      }
      live.propagate(
          [&](const segmux::FrameView& f) {
            ++live_frames;
            return f.index() == index;
          },
          {SEGMUX_FORWARD, index, 0});
    }
    std::printf("live: %d frames pushed, %d tracked as they arrived\n", live.num_frames(), live_frames);
    return frames > 0 && live_frames == 2 ? 0 : 1;
  } catch (const segmux::Exception& e) {
    std::fprintf(stderr, "track_cpp: %s\n", e.what());
    return 1;
  }
}
