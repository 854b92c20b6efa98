// Work in a forked child process, for the commands that must outlive what the work may do (run out of
// memory, crash, hang): what the child wrote back and how it ended.
#pragma once
#include <functional>
#include <string>

namespace segmux::apps {

struct ChildOutcome {
  std::string output;  // everything the child wrote to its report fd
  int status = 0;      // waitpid's status: WIFSIGNALED / WTERMSIG, WIFEXITED / WEXITSTATUS
};

// Forks; the child runs `work(report_fd)` and exits with what it returns (1 if it throws), without static
// destructors. The child ends with the parent (PR_SET_PDEATHSIG) and, with timeout_s > 0, by SIGALRM
// after that many seconds.
ChildOutcome run_in_child(const std::function<int(int report_fd)>& work, int timeout_s = 0);

// All of `text` to fd (again after EINTR; stops when the reader is gone).
void write_all(int fd, const std::string& text);

}  // namespace segmux::apps
