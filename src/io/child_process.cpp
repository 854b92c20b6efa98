#include "io/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace segmux {

std::string ChildResult::describe() const {
  if (signal == SIGKILL) return "was killed by SIGKILL (most likely out of memory)";
  if (signal != 0) return "died of signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exited with status " + std::to_string(exit_code);
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct SpawnActions {
  posix_spawn_file_actions_t a;
  SpawnActions() { posix_spawn_file_actions_init(&a); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&a); }
};

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, size_t max_report) {
  SEGMUX_CHECK(!argv.empty(), "run_child: no program");
  int p[2];
  SEGMUX_CHECK(::pipe2(p, O_CLOEXEC) == 0, "cannot create a pipe for a child process: ", std::strerror(errno));
  Fd rd{p[0]}, wr{p[1]};
  if (wr.fd <= kChildReportFd) {  // dup2 onto itself would keep close-on-exec
    Fd high{::fcntl(wr.fd, F_DUPFD_CLOEXEC, kChildReportFd + 1)};
    SEGMUX_CHECK(high.fd >= 0, "cannot create a pipe for a child process: ", std::strerror(errno));
    std::swap(wr.fd, high.fd);
  }
  SpawnActions act;
  posix_spawn_file_actions_adddup2(&act.a, wr.fd, kChildReportFd);
  posix_spawn_file_actions_adddup2(&act.a, STDERR_FILENO, STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &act.a, nullptr, args.data(), environ);
  SEGMUX_CHECK(rc == 0, "cannot start '", argv[0], "': ", std::strerror(rc));
  ::close(wr.fd);
  wr.fd = -1;
  ChildResult r;
  bool too_long = false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(rd.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (r.report.size() + size_t(n) > max_report) {
      too_long = true;  // keep draining so the child never blocks on a full pipe
      continue;
    }
    r.report.append(buf, size_t(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
  else if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  SEGMUX_CHECK(!too_long, "the child process '", argv[0], "' reported more than ", max_report, " bytes");
  return r;
}

}  // namespace segmux
