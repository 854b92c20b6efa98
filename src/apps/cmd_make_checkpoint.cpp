// segmux make-checkpoint: writes a PyTorch checkpoint with exactly the state dict a config implies
// (random weights, seeded), optionally broken on purpose (a key dropped / renamed / mis-shaped).
// segmux check-weights: opens a checkpoint (.pt or .safetensors) and validates it against a config,
// reporting the open time and the memory it cost.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "apps/cli.h"
#include "apps/commands.h"
#include "models/sam31/config.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/weights.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/random_checkpoint.h"

namespace segmux::apps {

namespace {

// "full" (the official full-size configuration) or a config file.
sam31::ModelConfig config_from_arg(const std::string& arg) {
  return arg == "full" ? sam31::default_config() : verify::load_model_or_fixture_config(arg);
}

// Resident set size in KiB from /proc/self/status: total, peak, anonymous (private heap) and
// file-backed (mapped page-cache pages, e.g. the checkpoint mapping).
struct Rss {
  long total = -1, peak = -1, anon = -1, file = -1;
};
Rss rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  Rss r;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) r.total = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) r.peak = std::stol(line.substr(6));
    if (line.rfind("RssAnon:", 0) == 0) r.anon = std::stol(line.substr(8));
    if (line.rfind("RssFile:", 0) == 0) r.file = std::stol(line.substr(8));
  }
  return r;
}

int make_checkpoint_main(int argc, char** argv) {
  CLI::App app{
      "Write a PyTorch (.pt zip) checkpoint holding exactly the SAM 3.1 state dict of a config: "
      "same keys, order and shapes as the official checkpoint, RoPE tables computed, all other "
      "weights seeded uniform noise. --drop/--rename/--mis-shape make broken variants.",
      "segmux make-checkpoint"};
  bool random = false;
  std::string config = "full", out;
  uint64_t seed = 0;
  verify::CheckpointEdits edits;
  std::vector<std::string> renames;
  app.add_flag("--random", random, "random weights (the only mode)")->required();
  app.add_option("--config", config, "'full' (official full size) or a config file (flat JSON or fixture config.json)");
  app.add_option("-o,--output,--out", out, "checkpoint file to write")->required();
  app.add_option("--seed", seed, "seed of the random weights");
  app.add_option("--drop", edits.drop, "leave this key out (repeatable)");
  app.add_option("--rename", renames, "OLD=NEW: store key OLD under NEW (repeatable)");
  app.add_option("--mis-shape", edits.mis_shape, "add 1 to the first dimension of this key (repeatable)");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  for (auto& r : renames) {
    auto eq = r.find('=');
    SEGMUX_USAGE_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < r.size(), "--rename expects OLD=NEW, got '", r,
                       "'");
    edits.rename.emplace_back(r.substr(0, eq), r.substr(eq + 1));
  }
  const sam31::ModelConfig cfg = config_from_arg(config);
  const auto table = sam31::expected_state_dict(cfg);
  auto t0 = std::chrono::steady_clock::now();
  verify::write_random_checkpoint(out, cfg, seed, edits);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: config '%s', %zu tensors (of %zu expected), seed %llu, %.1f s\n", out.c_str(),
              cfg.name.c_str(), table.size() - edits.drop.size(), table.size(), (unsigned long long)seed, seconds);
  return 0;
}

int check_weights_main(int argc, char** argv) {
  CLI::App app{
      "Open a SAM 3.1 checkpoint (.pt or .safetensors, chosen by content) and check it against "
      "the state dict of a config: one report of every missing, unexpected and mis-shaped key. "
      "Prints the open time and the resident memory it cost. Exit code 0 when it matches.",
      "segmux check-weights"};
  std::string file, config = "full";
  app.add_option("checkpoint", file, "checkpoint file")->required();
  app.add_option("--config", config, "'full' (official full size) or a config file");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  const sam31::ModelConfig cfg = config_from_arg(config);
  const auto before = rss_kib();
  auto t0 = std::chrono::steady_clock::now();
  sam31::Weights w = sam31::Weights::load(file);
  double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = rss_kib();
  size_t bytes = 0;
  for (auto& k : w.keys()) bytes += w.get(k).nbytes();
  std::printf(
      "opened %s: %zu tensors, %.1f MiB of weights, in %.3f s\n"
      "resident memory before -> after opening: total %.1f -> %.1f MiB (anonymous %.1f -> %.1f, "
      "file-backed %.1f -> %.1f), peak %.1f MiB\n",
      file.c_str(), w.size(), bytes / 1048576.0, open_s, before.total / 1024.0, after.total / 1024.0,
      before.anon / 1024.0, after.anon / 1024.0, before.file / 1024.0, after.file / 1024.0, after.peak / 1024.0);
  sam31::WeightsProblems problems = sam31::compare_weights(w, cfg);
  if (!problems.ok()) {
    std::fprintf(stderr, "segmux: error: config '%s': %s\n", cfg.name.c_str(), problems.message().c_str());
    return 1;
  }
  std::printf("matches config '%s' (%zu keys)\n", cfg.name.c_str(), w.size());
  return 0;
}

CommandRegistration make_checkpoint_registration("make-checkpoint", "write a random-weight SAM 3.1 .pt checkpoint",
                                                 make_checkpoint_main);
CommandRegistration check_weights_registration("check-weights", "validate a checkpoint against a config",
                                               check_weights_main);

}  // namespace

}  // namespace segmux::apps
