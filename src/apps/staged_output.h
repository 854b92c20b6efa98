// The staging folder of a command's outputs: everything is written into DIR/.partial-<pid>/ and moved
// into DIR by commit(); without commit() the staging folder (and DIR, if the run created it and it
// stays empty) is removed, so a failed run leaves DIR as it was. Staging folders of killed runs are
// removed by the next run in DIR.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace segmux::apps {

class StagedOutput {
 public:
  explicit StagedOutput(const std::string& out_dir);
  ~StagedOutput();
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  std::string stage() const { return stage_.string(); }
  // Moves every entry of the staging folder into the output folder, replacing older outputs of the
  // same names (a previous run's masks/ folder goes as a whole: stale frames must not remain), and
  // removes the previous run's outputs named in `ours` that this run did not write, so DIR never
  // mixes two runs.
  void commit(const std::vector<std::string>& ours);

 private:
  std::filesystem::path out_, stage_;
  bool created_out_ = false, committed_ = false;
};

}  // namespace segmux::apps
