#include "apps/cli.h"

#include "core/cpu_cores.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

namespace segmux::apps {

int max_threads() {
  const int hw = int(std::min<unsigned>(std::thread::hardware_concurrency(), 1u << 16));
  return std::max(256, 4 * hw);
}

namespace {

// "" when `s` is a whole number in 1..max_threads(), else why not.
std::string threads_problem(const std::string& s) {
  const std::string range = "from 1 to " + std::to_string(max_threads());
  const bool digits = !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) return "'" + s + "' is not a whole number " + range;
  const long v = std::stol(s);
  if (v < 1 || v > max_threads()) return s + " is out of range: threads must be " + range;
  return "";
}

}  // namespace

void check_threads(int threads, const std::string& what) {
  std::string problem = threads_problem(std::to_string(threads));
  if (!problem.empty()) usage_fail(what, ": ", problem);
}

int machine_cores() { return usable_cores(); }

CLI::Option* add_threads_option(CLI::App& app, int& threads, const std::string& help) {
  CLI::Validator v([](std::string& s) { return threads_problem(s); }, "1.." + std::to_string(max_threads()),
                   "thread count");
  threads = std::min(machine_cores(), max_threads());
  return app
      .add_option("--threads", threads,
                  help + " (default: the cores this process may use, " + std::to_string(threads) + " here)")
      ->check(v);
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string valid_utf8(const std::string& s) { return nlohmann::json::parse(json_text(s)).get<std::string>(); }

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: printed on stdout, exit 0
  } catch (const CLI::ParseError& e) {
    std::string name = app.get_name();  // "segmux run"
    std::string command = name.rfind("segmux ", 0) == 0 ? name.substr(7) : name;
    std::fprintf(stderr, "segmux: error: %s: %s\n(see '%s --help')\n", command.c_str(), e.what(), name.c_str());
    return 2;
  }
}

}  // namespace segmux::apps
