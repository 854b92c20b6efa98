// libFuzzer target: GIF, PNG and frame decoding (pipeline/video_io). Bytes starting with "GIF" are read
// as an animated GIF (every frame composed), anything else as an image through read_image (libav, after
// the PNG header check). Any bytes must end in frames or a segmux::Error, never a crash or an
// allocation beyond the documented limits (kMaxFramePixels, kMaxGifTotalPixels).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "io/safetensors.h"
#include "pipeline/media/video_io.h"

namespace {

using segmux::pipeline::RgbImage;

RgbImage seed_image(int w, int h, int t) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * size_t(h) * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t((i * 37 + size_t(t) * 91) % 256);
  return img;
}

// SEGMUX_FUZZ_WRITE_SEEDS=DIR: a 3-frame GIF and two PNGs, then exit.
void write_seeds_if_asked() {
  const char* dir = std::getenv("SEGMUX_FUZZ_WRITE_SEEDS");
  if (!dir) return;
  auto gif = segmux::pipeline::open_video_writer(std::string(dir) + "/seed0.gif", 8, 6, 10);
  for (int t = 0; t < 3; ++t) gif->add(seed_image(8, 6, t));
  gif->finish();
  segmux::pipeline::write_png_rgb(std::string(dir) + "/seed1.png", seed_image(5, 4, 0));
  segmux::pipeline::write_png_gray(std::string(dir) + "/seed2.png", 3, 2, {0, 1000, 2000, 3000, 4000, 65535}, true);
  std::exit(0);
}

}  // namespace

std::string scratch_base() { return "/tmp/segmux_fuzz_media_" + std::to_string(::getpid()); }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_seeds_if_asked();
  std::atexit([] {
    std::remove((scratch_base() + ".gif").c_str());
    std::remove((scratch_base() + ".png").c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The readers take paths: one scratch file per process.
  const bool gif = size >= 3 && data[0] == 'G' && data[1] == 'I' && data[2] == 'F';
  static const std::string base = scratch_base();
  const std::string path = base + (gif ? ".gif" : ".png");
  segmux::write_file_atomic(path, data, size);
  try {
    if (gif) {
      auto r = segmux::pipeline::open_video(path);
      for (int i = 0; i < r->num_frames() && i < 64; ++i) r->frame(i);
      if (r->num_frames() > 1) r->frame(0);  // backwards: recomposes from the start
    } else {
      segmux::pipeline::read_image(path);
    }
  } catch (const segmux::Error&) {
  }
  return 0;
}
