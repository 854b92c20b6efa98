// A folder of frames: image files sorted by name, each decoded when asked for (read_image).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "pipeline/media/media_detail.h"

namespace segmux::pipeline::media_detail {

namespace {

namespace fs = std::filesystem;

class FolderReader : public VideoReader {
 public:
  FolderReader(const std::string& dir, double fps) : dir_(dir), fps_(fps) {
    SEGMUX_CHECK(fps >= 0 && std::isfinite(fps), "frame rate ", fps, " for '", dir, "' is not positive");
    for (auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && is_image_ext(lower_ext(e.path().string()))) files_.push_back(e.path().string());
    std::sort(files_.begin(), files_.end());
    SEGMUX_CHECK(!files_.empty(), "folder '", dir, "' has no image files (png, jpg, ...)");
    RgbImage first = read_image(files_[0]);
    width_ = first.width;
    height_ = first.height;
  }
  int num_frames() const override { return int(files_.size()); }
  int width() const override { return width_; }
  int height() const override { return height_; }
  double fps() const override { return fps_ > 0 ? fps_ : 25.0; }
  std::optional<double> time_s(int index) const override {
    if (fps_ <= 0) return std::nullopt;
    return double(index) / fps_;
  }
  std::string describe() const override {
    return dir_ + ": " + std::to_string(files_.size()) + " frames " + std::to_string(width_) + "x" +
           std::to_string(height_) + " (image folder" + (fps_ > 0 ? ", " + std::to_string(fps_) + " fps" : "") + ")";
  }
  RgbImage frame(int index) override {
    SEGMUX_CHECK(index >= 0 && index < num_frames(), "frame ", index, " is outside the folder (", num_frames(),
                 " frames)");
    RgbImage img = read_image(files_[size_t(index)]);
    SEGMUX_CHECK(img.width == width_ && img.height == height_, "'", files_[size_t(index)], "' is ", img.width, "x",
                 img.height, " but the first frame is ", width_, "x", height_);
    return img;
  }

 private:
  std::string dir_;
  double fps_ = 0;
  std::vector<std::string> files_;
  int width_ = 0, height_ = 0;
};

}  // namespace

std::unique_ptr<VideoReader> open_folder_reader(const std::string& dir, double fps) {
  return std::make_unique<FolderReader>(dir, fps);
}

}  // namespace segmux::pipeline::media_detail
