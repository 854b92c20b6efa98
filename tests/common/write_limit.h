// Runs a writer in a child process whose file-size limit (RLIMIT_FSIZE) is small, so that its writes
// fail part-way as they would on a full disk (EFBIG instead of ENOSPC: same code path, same errno
// plumbing), and returns the segmux::Error message the child got ("" if it threw none).
#pragma once
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "core/error.h"

namespace segmux::testing_support {

inline std::string error_under_file_size_limit(size_t limit_bytes, const std::function<void()>& write) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG instead of killing
    rlimit lim{rlim_t(limit_bytes), rlim_t(limit_bytes)};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string msg;
    try {
      write();
    } catch (const Error& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      msg = std::string("not a segmux::Error: ") + e.what();
    }
    ssize_t n = ::write(fds[1], msg.data(), msg.size());
    ::_exit(n == ssize_t(msg.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return msg;
}

}  // namespace segmux::testing_support
