// Internals shared by the media readers and writers (video_io.h is the media API): file-name and size
// checks, atomic temporary files, and the reader / writer of each kind, which open_video and
// open_video_writer pick between (video_io.cpp). One file per kind: video_io_libav.cpp (libav: videos,
// single images), video_io_gif.cpp (giflib), video_io_folder.cpp (frame folders).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "pipeline/media/video_io.h"

namespace segmux::pipeline::media_detail {

std::string lower_ext(const std::string& path);  // ".png", lower case
bool is_image_ext(const std::string& e);
std::string temp_path_for(const std::string& path);  // PATH.tmp.<pid>
// Renames tmp to path (the atomic commit); removes tmp and throws, naming path, when that fails.
void commit_temp(const std::string& tmp, const std::string& path);
// Refuses a frame size beyond kMaxFramePixels (or not positive); `what` names the file and the thing.
void check_frame_size(int64_t width, int64_t height, const std::string& what);
// A PNG's declared size, read from its header before any decoder sees the file.
void check_png_header(const std::string& path);

std::unique_ptr<VideoReader> open_libav_reader(const std::string& path);
std::unique_ptr<VideoReader> open_gif_reader(const std::string& path);
std::unique_ptr<VideoReader> open_folder_reader(const std::string& dir, double fps);
std::unique_ptr<VideoWriter> open_gif_writer(const std::string& path, int width, int height, double fps);
std::unique_ptr<VideoWriter> open_libav_writer(const std::string& path, int width, int height, double fps);

}  // namespace segmux::pipeline::media_detail
