// Runs commands from tests (the built `segmux` above all): exit status and captured stdout. One helper
// for every test folder; each test picks its own redirections (merge stderr, keep it apart, drop it).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
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

// A whole file's bytes ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct SplitResult {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `segmux ARGS` with stdout and stderr kept apart (stdout may carry a --json summary); stderr goes
// through `err_file`, a scratch path of the calling test.
inline SplitResult run_segmux_split(const std::string& args, const std::string& err_file, const std::string& env = "") {
  auto run = run_segmux(args, "2>" + err_file, env);
  return SplitResult{run.code, run.out, read_text(err_file)};
}

}  // namespace segmux::test
