#include "apps/child_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace segmux::apps {

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= size_t(n);
  }
}

ChildOutcome run_in_child(const std::function<int(int report_fd)>& work, int timeout_s) {
  int fds[2];
  SEGMUX_CHECK(::pipe(fds) == 0, "pipe(): ", std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  SEGMUX_CHECK(pid >= 0, "fork(): ", std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);               // an outer time limit that ends the parent ends the child too
    if (timeout_s > 0) ::alarm(unsigned(timeout_s));  // SIGALRM ends the child: the caller reports a timeout
    int rc = 1;
    try {
      rc = work(fds[1]);
    } catch (...) {
    }
    ::close(fds[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(rc);  // no static destructors / atexit in the child
  }
  ::close(fds[1]);
  ChildOutcome out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.output.append(buf, size_t(n));
  }
  ::close(fds[0]);
  while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

}  // namespace segmux::apps
