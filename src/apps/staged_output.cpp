#include "apps/staged_output.h"

#include <unistd.h>

#include "core/error.h"
#include "io/files.h"

namespace segmux::apps {

namespace fs = std::filesystem;

StagedOutput::StagedOutput(const std::string& out_dir) : out_(out_dir) {
  std::error_code ec;
  created_out_ = !fs::exists(out_, ec);
  fs::create_directories(out_, ec);
  SEGMUX_CHECK(!ec && fs::is_directory(out_), "cannot create output folder '", out_, "'",
               ec ? ": " + ec.message() : std::string());
  remove_abandoned_partials(out_.string(), ".partial-");  // left by runs that were killed
  stage_ = out_ / (".partial-" + std::to_string(::getpid()));
  fs::remove_all(stage_, ec);
  fs::create_directories(stage_, ec);
  SEGMUX_CHECK(!ec, "cannot create '", stage_.string(), "': ", ec.message());
}

StagedOutput::~StagedOutput() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(stage_, ec);
  if (created_out_ && fs::is_empty(out_, ec)) fs::remove(out_, ec);
}

void StagedOutput::commit(const std::vector<std::string>& ours) {
  for (const auto& name : ours) {
    std::error_code ec;
    if (!fs::exists(stage_ / name, ec) && fs::exists(fs::symlink_status(out_ / name, ec))) {
      fs::remove_all(out_ / name, ec);
      SEGMUX_CHECK(!ec, "cannot remove the previous run's '", (out_ / name).string(), "': ", ec.message());
    }
  }
  for (const auto& entry : fs::directory_iterator(stage_)) {
    fs::path dst = out_ / entry.path().filename();
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(dst, ec))) {
      fs::remove_all(dst, ec);
      SEGMUX_CHECK(!ec, "cannot replace '", dst.string(), "': ", ec.message());
    }
    fs::rename(entry.path(), dst, ec);
    SEGMUX_CHECK(!ec, "cannot move '", entry.path().string(), "' to '", dst.string(), "': ", ec.message());
  }
  std::error_code ec;
  fs::remove(stage_, ec);
  committed_ = true;
}

}  // namespace segmux::apps
