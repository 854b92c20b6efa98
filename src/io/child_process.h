// Running a program (in practice segmux itself, "/proc/self/exe") as a child process and reading what
// it reports on a pipe: work whose memory must be returned to the system in full when it ends (one
// deployment candidate's verification at full size) runs there, and its crash or out-of-memory kill
// becomes a message instead of the end of the parent. posix_spawn, not fork: the parent may hold
// OpenMP and ONNX Runtime thread pools, which a forked child cannot use.
#pragma once
#include <string>
#include <vector>

namespace segmux {

// The child writes its report to this descriptor (a pipe); its stdout goes to the parent's stderr,
// so nothing it prints can mix with the parent's output.
inline constexpr int kChildReportFd = 3;

struct ChildResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string report;  // everything written to kChildReportFd (at most max_report bytes)
  bool ok() const { return signal == 0 && exit_code == 0; }
  // "exited with status 3", "was killed by SIGKILL (most likely out of memory)", "died of signal 11
  // (Segmentation fault)".
  std::string describe() const;
};

// Runs argv[0] with argv (the environment inherited) and waits for it. Throws segmux::Error when it
// cannot be started or its report exceeds max_report bytes.
ChildResult run_child(const std::vector<std::string>& argv, size_t max_report = size_t(64) << 20);

}  // namespace segmux
