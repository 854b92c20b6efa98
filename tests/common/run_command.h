// Runs commands from tests (the built `segmux` above all): exit status and captured stdout. One helper
// for every test folder; each test picks its own redirections (merge stderr, keep it apart, drop it).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace segmux::test {

struct CommandResult {
  int code = -1;    // exit status; -1 when the command could not be started
  std::string out;  // what it wrote to stdout (after the command line's own redirections)
};

// Runs `cmdline` through /bin/sh. A command killed by a signal shows as 128 + N (the shell's status).
inline CommandResult run_shell(const std::string& cmdline) {
  CommandResult r;
  FILE* p = popen(cmdline.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `[env] segmux ARGS REDIRECT` from the build folder; by default stderr is merged into the output.
inline CommandResult run_segmux(const std::string& args, const std::string& redirect = "2>&1",
                                const std::string& env = "") {
  return run_shell(env + (env.empty() ? "" : " ") + std::string(SEGMUX_BINARY_DIR) + "/segmux " + args + " " +
                   redirect);
}

}  // namespace segmux::test
