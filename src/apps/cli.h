// Command-line conventions shared by every segmux command: one error style
// ("segmux: error: <what>: <why>" on stderr), exit 1 for failures and 2 for usage errors, and one
// validated range for every --threads option.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace segmux::apps {

// A usage error: the command line is wrong (main exits 2 and points at --help), not the input files.
class UsageError : public Error {
 public:
  using Error::Error;
};

template <typename... Parts>
[[noreturn]] void usage_fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw UsageError(os.str());
}

// Parses argv into `app`. Returns -1 when the command should go on, else the exit code: 0 after
// --help (printed on stdout), 2 for a usage error (printed as "segmux: error: <command>: <why>").
int parse_command_line(CLI::App& app, int argc, char** argv);

// The candidate closest to `typed` by edit distance, when close enough to be a likely typo (at most a
// third of its length, and 2 or less for short words); "" otherwise.
std::string closest_spelling(const std::string& typed, const std::vector<std::string>& candidates);

// JSON text for output: bytes that are not UTF-8 (file names, prompts) become U+FFFD instead of the
// JSON library's exception. indent < 0: one line.
std::string json_text(const nlohmann::json& j, int indent = -1);
// `s` with bytes that are not UTF-8 replaced by U+FFFD (for metadata that must be valid UTF-8).
std::string valid_utf8(const std::string& s);

// The largest --threads accepted: 4x the hardware threads, at least 256 (more only oversubscribes the
// cores; 65536 crashed the OpenMP runtime).
int max_threads();
// The cores this process may run on (its CPU affinity), at least 1.
int machine_cores();
// --threads N, validated to 1..max_threads() before the command runs; `threads` defaults to
// machine_cores() (issue 9: not a fixed 2).
CLI::Option* add_threads_option(CLI::App& app, int& threads, const std::string& help);
// The same check for a thread count from anywhere else (a config file, an API caller).
void check_threads(int threads, const std::string& what);

}  // namespace segmux::apps

#define SEGMUX_USAGE_CHECK(cond, ...)                     \
  do {                                                    \
    if (!(cond)) ::segmux::apps::usage_fail(__VA_ARGS__); \
  } while (0)
