// segmux cache list|clear|prune --max-size SIZE: the compiled-model cache (~3.4 GB per entry at full
// size). Only folders the cache made are listed or removed.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <ctime>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "deploy/model_store/cache.h"

namespace segmux::apps {

namespace {

std::string when(int64_t t) {
  const std::time_t tt = std::time_t(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&tt));
  return buf;
}

int cache_main(int argc, char** argv) {
  CLI::App app{"List, clear or prune the compiled-model cache (default ~/.cache/segmux).", "segmux cache"};
  std::string cache_dir, max_size;
  app.add_option("--cache-dir", cache_dir, "cache folder (default: $XDG_CACHE_HOME/segmux or ~/.cache/segmux)");
  app.require_subcommand(1);
  app.fallthrough();  // --cache-dir before or after the subcommand
  CLI::App* list = app.add_subcommand("list", "the entries, most recently used first, with sizes");
  CLI::App* clear = app.add_subcommand("clear", "remove every entry");
  CLI::App* prune = app.add_subcommand("prune", "remove least recently used entries down to a total size");
  prune->add_option("--max-size", max_size, "total size to keep, e.g. 10G, 500M")->required();
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  if (cache_dir.empty()) cache_dir = pipeline::default_cache_dir();

  if (list->parsed()) {
    uint64_t total = 0;
    const auto entries = pipeline::list_cache(cache_dir);
    for (const auto& e : entries) {
      std::printf("%-34s %10s  %s  %s%s\n", e.name.c_str(), human_bytes(double(e.bytes)).c_str(),
                  when(e.last_used).c_str(), e.checkpoint.empty() ? "" : e.checkpoint.c_str(),
                  e.partial ? " (unfinished)" : "");
      total += e.bytes;
    }
    std::printf("%zu entries, %s in %s\n", entries.size(), human_bytes(double(total)).c_str(), cache_dir.c_str());
    return 0;
  }
  uint64_t limit = 0;
  if (prune->parsed()) {
    try {
      limit = pipeline::parse_size(max_size);
    } catch (const Error& e) {
      usage_fail("--max-size: ", e.what());
    }
  }
  const pipeline::CacheCleanup r =
      clear->parsed() ? pipeline::clear_cache(cache_dir) : pipeline::prune_cache(cache_dir, limit);
  std::printf("removed %d entries (%s); %s left in %s\n", r.removed, human_bytes(double(r.bytes_freed)).c_str(),
              human_bytes(double(r.bytes_left)).c_str(), cache_dir.c_str());
  return 0;
}

CommandRegistration reg("cache", "list, clear or prune the compiled-model cache", cache_main);

}  // namespace

}  // namespace segmux::apps
