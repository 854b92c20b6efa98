#include "apps/cli.h"

#include "core/cpu_cores.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
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

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

// "--promt" -> " (did you mean '--prompt'?)" for each unknown option CLI11 reports, "" when none is close.
std::string option_suggestions(const CLI::App& app, const CLI::ExtrasError& e) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  std::string hints;
  const std::string what = e.what();  // "The following argument was not expected: --promt"
  const size_t colon = what.rfind(": ");
  std::istringstream extras(colon == std::string::npos ? "" : what.substr(colon + 2));
  for (std::string typed; extras >> typed;) {
    const std::string flag = typed.substr(0, typed.find('='));
    if (flag.rfind("-", 0) != 0) continue;
    const std::string near = closest_spelling(flag, names);
    if (!near.empty()) hints += " (did you mean '" + near + "' for '" + flag + "'?)";
  }
  return hints;
}

}  // namespace

std::string closest_spelling(const std::string& typed, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(typed, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  const size_t allowed = std::max<size_t>(std::min<size_t>(2, typed.size() / 2), typed.size() / 3);
  return best_distance > 0 && best_distance <= allowed ? best : std::string();
}

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: printed on stdout, exit 0
  } catch (const CLI::ParseError& e) {
    std::string name = app.get_name();  // "segmux run"
    std::string command = name.rfind("segmux ", 0) == 0 ? name.substr(7) : name;
    std::string hint;
    if (const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&e)) hint = option_suggestions(app, *extras);
    std::fprintf(stderr, "segmux: error: %s: %s%s\n(see '%s --help')\n", command.c_str(), e.what(), hint.c_str(),
                 name.c_str());
    return 2;
  }
}

}  // namespace segmux::apps
