// report.md: what `segmux deploy` did, with which commands, how long each stage took, what the
// verification found, and the command lines other offline-model compilers take (not run here).
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/error.h"
#include "deploy/package/package_docs.h"
#include "io/json_limits.h"

namespace segmux::package {

namespace fs = std::filesystem;

namespace {

std::string human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(u ? 1 : 0) << bytes << " " << units[u];
  return s.str();
}

std::string secs(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(s < 10 ? 2 : 1) << s << " s";
  return o.str();
}

void sizes_section(std::ostringstream& md, const std::string& dir) {
  std::map<std::string, uint64_t> by_folder;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) {
      std::string rel = fs::relative(e.path(), dir).generic_string();
      const size_t slash = rel.find('/');
      by_folder[slash == std::string::npos ? "(root: .smx, model.json, docs)" : rel.substr(0, slash) + "/"] +=
          e.file_size();
    }
  md << "\n## Sizes\n\n| folder | size |\n| --- | --- |\n";
  for (const auto& [k, v] : by_folder) md << "| " << k << " | " << human(double(v)) << " |\n";
}

void verification_section(std::ostringstream& md, const nlohmann::json& v) {
  md << "\n## Verification (`verification.md`)\n\nVerdict: **" << v.value("verdict", "?")
     << "**. Worst per compiled file and engine:\n\n| file | engine | worst cosine | worst max abs | verdict |\n"
     << "| --- | --- | --- | --- | --- |\n";
  struct Worst {
    double cosine = 1, max_abs = 0;
    std::string verdict = "pass";
  };
  std::map<std::pair<std::string, std::string>, Worst> worst;
  const char* order[] = {"pass", "review", "fail"};
  auto rank = [&](const std::string& s) {
    for (int i = 0; i < 3; ++i)
      if (s == order[i]) return i;
    return 2;
  };
  for (const auto& r : v.value("rows", nlohmann::json::array())) {
    Worst& w = worst[{r.value("file", ""), r.value("engine", "")}];
    w.cosine = std::min(w.cosine, r.value("cosine", 0.0));
    w.max_abs = std::max(w.max_abs, r.value("max_abs", 0.0));
    if (rank(r.value("verdict", "fail")) > rank(w.verdict)) w.verdict = r.value("verdict", "fail");
  }
  for (const auto& [k, w] : worst)
    md << "| " << k.first << " | " << k.second << " | " << std::fixed << std::setprecision(8) << w.cosine
       << std::defaultfloat << " | " << std::setprecision(3) << w.max_abs << " | " << w.verdict << " |\n";
  for (const auto& n : v.value("notes", nlohmann::json::array())) md << "\nNote: " << n.get<std::string>() << "\n";
  for (const auto& e : v.value("errors", nlohmann::json::array())) md << "\nERROR: " << e.get<std::string>() << "\n";
}

}  // namespace

std::string deploy_report(const ReportInputs& in, const std::string& dir) {
  std::ostringstream md;
  md << "# Deployment record: " << in.cfg.name << "\n\n"
     << "- made " << in.started_utc << " by " << in.build_identity << " on a " << in.host_isa << " machine\n"
     << "- command: `" << in.command_line << "`\n"
     << "- checkpoint: `" << fs::path(in.checkpoint).filename().string() << "`, " << human(double(in.checkpoint_bytes))
     << ", sha256 `" << in.checkpoint_sha256 << "`\n"
     << "- compiled files: " << in.precisions.front() << " / " << in.isas.front() << " in the package root";
  for (const auto& p : in.precisions)
    for (const auto& i : in.isas)
      if (!(p == in.precisions.front() && i == in.isas.front()))
        md << "; " << p << " / " << i << " in `compiled/" << p << "-" << i << "/`";
  md << "\n- total " << secs(in.total_seconds) << " (verification " << secs(in.verify_seconds) << ")\n";
  md << "\nUse it: `segmux track VIDEO --prompt TEXT --model " << in.package_dir << " --out OUT`; check it: "
     << "`segmux verify-package " << in.package_dir << "`. Layout and meaning of every file: docs/deploy.md.\n";

  md << "\n## What was done, with timings\n\n| stage | file | time |\n| --- | --- | --- |\n";
  for (const auto& s : in.build_stages)
    md << "| " << s.value("stage", "") << " | " << s.value("file", "") << " | " << secs(s.value("seconds", 0.0))
       << " |\n";
  md << "| verification | all | " << secs(in.verify_seconds) << " |\n";

  md << "\n## Slimmed ONNX (`onnx/<file>.slim.onnx`: shape arithmetic and constants folded, no-ops, duplicates "
        "and dead nodes removed)\n\n| file | nodes before | nodes after |\n| --- | --- | --- |\n";
  for (const auto& s : in.slim)
    md << "| " << s.value("file", "") << " | " << s.value("nodes_before", 0) << " | " << s.value("nodes_after", 0)
       << " |\n";
  verification_section(md, in.verification);
  sizes_section(md, dir);

  md << "\n## Other offline-model compilers (NOT run here)\n\nThe package's `onnx/<file>.onnx` files are standard "
        "ONNX (opset 17, static shapes); these are the command lines Ascend ATC and TensorRT take for them. They "
        "were not run here: no such toolchain or device on this machine.\n";
  for (const sam31::Candidate& c : sam31::candidates()) {
    const std::string path = dir + "/contracts/" + c.name + ".json";
    if (!fs::exists(path)) continue;
    const nlohmann::json contract = read_untrusted_json_file(path);
    md << "\n### " << c.name << " (" << c.runs << ")\n";
    for (const auto& f : contract.value("files", nlohmann::json::array())) {
      md << "\n`" << f.value("file", "") << "` (not run here):\n\n```\n";
      for (const auto& p : in.precisions) md << atc_command(f, p) << "\n";
      for (const auto& p : in.precisions) md << trtexec_command(f, p) << "\n";
      md << "```\n";
    }
  }
  return md.str();
}

}  // namespace segmux::package
