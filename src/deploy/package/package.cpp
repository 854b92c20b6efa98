#include "deploy/package/package.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "compiler/compile.h"
#include "compiler/pass_manager.h"
#include "compiler/slim.h"
#include "core/error.h"
#include "core/mapped_pages.h"
#include "deploy/package/package_docs.h"
#include "io/files.h"
#include "io/json_limits.h"
#include "io/paths.h"
#include "io/sha256.h"
#include "models/sam31/candidates.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/weights.h"
#include "onnx/onnx_io.h"
#include "runtime/offline_model.h"

namespace segmux::package {

const char* const kVersion = "segmux-" SEGMUX_VERSION;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

void copy_vocab(const std::string& vocab, const std::string& dir, std::string& rel) {
  if (vocab.empty()) return;
  rel = "tokenizer/" + fs::path(vocab).filename().string();
  make_directories(dir + "/tokenizer");
  fs::copy_file(vocab, dir + "/" + rel, fs::copy_options::overwrite_existing);
}

struct Variant {
  std::string precision, isa, subdir;  // subdir "" = the package root
};

std::vector<Variant> variants(const PackageOptions& opt) {
  std::vector<Variant> v;
  for (const std::string& p : opt.precisions)
    for (const std::string& t : opt.targets) {
      const std::string isa = resolve_target(t);
      v.push_back({p, isa, v.empty() ? "" : "compiled/" + p + "-" + isa});
    }
  return v;
}

// The checkpoint is mapped: after each step the pages it read leave the resident set (the next
// candidate that needs them reads them again from the page cache), so a compile holds one candidate's
// weights at a time instead of the whole checkpoint.
void release_checkpoint_pages(const sam31::Weights& w) {
  for (const std::string& key : w.keys()) {
    const Tensor& t = w.get(key);
    release_mapped_pages(t.raw(), t.nbytes());
  }
}

}  // namespace

std::string resolve_target(const std::string& target) {
  if (target == "native") return host_isa();
  SEGMUX_CHECK(target == "generic" || target == "x86-64-avx512", "unknown target '", target,
               "' (known: native, generic, x86-64-avx512)");
  return target;
}

void check_variant_lists(const std::vector<std::string>& precisions, const std::vector<std::string>& targets) {
  SEGMUX_CHECK(!precisions.empty() && !targets.empty(), "no precision or no target requested");
  for (size_t i = 0; i < precisions.size(); ++i) {
    SEGMUX_CHECK(precisions[i] == "fp32" || precisions[i] == "bf16", "unknown precision '", precisions[i],
                 "' (known: fp32, bf16)");
    for (size_t j = 0; j < i; ++j)
      SEGMUX_CHECK(precisions[j] != precisions[i], "precision '", precisions[i], "' twice");
  }
  std::vector<std::string> isas;
  for (const std::string& t : targets) {
    const std::string isa = resolve_target(t);
    SEGMUX_CHECK(std::find(isas.begin(), isas.end(), isa) == isas.end(), "target '", t, "' is ", isa,
                 ", requested twice");
    isas.push_back(isa);
  }
}

void write_model_json(const std::string& dir, const sam31::ModelConfig& cfg, const std::string& vocab_rel,
                      const nlohmann::json& provenance) {
  nlohmann::json meta = {{"producer", kVersion},
                         {"config", nlohmann::json::parse(sam31::config_to_json(cfg))},
                         {"vocab", vocab_rel},
                         {"provenance", provenance}};
  write_text(dir + "/model.json", meta.dump(2));
}

void read_model_json(const std::string& dir, sam31::ModelConfig& cfg, std::string& vocab) {
  const std::string path = dir + "/model.json";
  nlohmann::json meta = read_untrusted_json_file(path);
  SEGMUX_CHECK(meta.is_object() && meta.contains("config") && meta["config"].is_object(), "'", path,
               "' is not a segmux model description (no \"config\" object)");
  cfg = sam31::parse_config(meta["config"].dump(), path);
  if (!meta.contains("vocab") || !meta["vocab"].is_string()) return;
  const std::string v = meta["vocab"].get<std::string>();
  if (v.empty()) return;
  vocab = fs::path(v).is_absolute() ? v : dir + "/" + v;  // absolute: a folder made before packages
}

BuildRecord build_package(const sam31::ModelConfig& cfg, const PackageOptions& opt, const std::string& dir,
                          const LogFn& log) {
  check_variant_lists(opt.precisions, opt.targets);
  const auto t_all = Clock::now();
  BuildRecord rec;
  make_directories(dir);
  auto stage = [&](const std::string& name, const std::string& file, Clock::time_point t0) {
    rec.stages.push_back({{"stage", name}, {"file", file}, {"seconds", since(t0)}});
  };

  auto t0 = Clock::now();
  rec.checkpoint_sha256 = opt.checkpoint_sha256;
  if (rec.checkpoint_sha256.empty()) {
    log("hashing the checkpoint " + opt.checkpoint);
    rec.checkpoint_sha256 = sha256_file(opt.checkpoint);
    stage("hash checkpoint", "", t0);
  }
  t0 = Clock::now();
  log("loading weights " + opt.checkpoint);
  sam31::Weights w = sam31::Weights::load(opt.checkpoint);
  sam31::check_weights(w, cfg);
  release_checkpoint_pages(w);
  stage("load weights", "", t0);

  std::string vocab_rel;
  copy_vocab(opt.vocab, dir, vocab_rel);
  const nlohmann::json provenance = {{"checkpoint", fs::path(opt.checkpoint).filename().string()},
                                     {"checkpoint_sha256", rec.checkpoint_sha256},
                                     {"command_line", opt.command_line}};
  std::vector<Variant> vars = variants(opt);
  for (const Variant& v : vars) {
    if (!opt.smx_files) break;  // model.json at the root only
    rec.variant_dirs.push_back(v.subdir);
    if (v.subdir.empty()) continue;
    make_directories(dir + "/" + v.subdir);
    nlohmann::json p = provenance;
    p["precision"] = v.precision;
    p["target_isa"] = v.isa;
    write_model_json(dir + "/" + v.subdir, cfg, vocab_rel.empty() ? "" : "../../" + vocab_rel, p);
  }
  nlohmann::json root_prov = provenance;
  root_prov["precision"] = vars.front().precision;
  root_prov["target_isa"] = vars.front().isa;
  if (!opt.smx_files) root_prov = provenance;  // ONNX only: no precision or ISA was compiled for
  write_model_json(dir, cfg, vocab_rel, root_prov);

  nlohmann::json contracts = nlohmann::json::object();
  std::map<std::string, std::string> contract_markdown;  // candidate -> its written contract
  if (!opt.smx_files) vars.clear();
  if (opt.route_files || opt.onnx_files) make_directories(dir + "/onnx");
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    const sam31::Candidate& c = sam31::candidate(f.candidate);
    t0 = Clock::now();
    ir::Graph g = c.build(cfg, w, f.variant);
    stage("build graph", f.file, t0);
    if (opt.route_files || opt.onnx_files) {
      log("exporting " + f.file + " as ONNX");
      t0 = Clock::now();
      onnx_io::export_onnx_file(g, dir + "/onnx/" + f.file + ".onnx");
      stage("export ONNX", f.file, t0);
    }
    if (opt.route_files) {
      t0 = Clock::now();
      ir::Graph slim = g;
      const size_t before = slim.nodes.size();
      compiler::slim_graph(slim);  // the passes `segmux slim` runs
      onnx_io::export_onnx_file(slim, dir + "/onnx/" + f.file + ".slim.onnx");
      stage("slim ONNX", f.file, t0);
      rec.slim.push_back({{"file", f.file}, {"nodes_before", before}, {"nodes_after", slim.nodes.size()}});
      contracts[c.name]["files"].push_back(file_contract(f, g));
      if (f.variant.empty()) contract_markdown[c.name] = c.contract(cfg, g);
    }
    for (const Variant& v : vars) {
      log("compiling " + f.file + " (" + v.precision + ", " + v.isa + ")");
      t0 = Clock::now();
      compiler::CompileOptions co;
      co.precision = v.precision;
      co.target_isa = v.isa;
      co.command_line = opt.command_line + " (" + f.file + ", " + v.precision + ", " + v.isa + ")";
      compiler::CompileResult r = compiler::compile_graph(g, co);
      const std::string out = dir + "/" + (v.subdir.empty() ? "" : v.subdir + "/") + f.file + ".smx";
      compiler::write_compiled(out, r, co);
      stage("compile " + v.precision + " " + v.isa, f.file, t0);
    }
    release_checkpoint_pages(w);
  }
  if (opt.route_files) write_route_docs(cfg, contracts, contract_markdown, dir);
  rec.seconds = since(t_all);
  return rec;
}

bool ort_runtime_file(const std::string& rel) {
  const auto ends_with = [&](const std::string& tail) {
    return rel.size() > tail.size() && rel.compare(rel.size() - tail.size(), tail.size(), tail) == 0;
  };
  const bool onnx = rel.rfind("onnx/", 0) == 0 && rel.find('/', 5) == std::string::npos &&
                    (ends_with(".onnx") || ends_with(".onnx.data")) && rel.find(".slim.onnx") == std::string::npos;
  return onnx || rel == "model.json" || rel.rfind("tokenizer/", 0) == 0;
}

bool runtime_file(const std::string& rel) {
  const bool root = rel.find('/') == std::string::npos;
  return rel == "model.json" || (root && rel.size() > 4 && rel.compare(rel.size() - 4, 4, ".smx") == 0) ||
         rel.rfind("tokenizer/", 0) == 0;
}

void move_into_place(const std::string& staged, const std::string& dest, bool replace) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dest))) {
    SEGMUX_CHECK(replace, "'", dest, "' already exists (remove it, or --force to replace it)");
    const std::string old = dest + ".old-" + std::to_string(::getpid());
    fs::rename(dest, old, ec);
    SEGMUX_CHECK(!ec, "cannot move '", dest, "' aside: ", ec.message());
    fs::rename(staged, dest, ec);
    if (ec) {
      std::error_code ec2;
      fs::rename(old, dest, ec2);
      fail("cannot move the package into '", dest, "': ", ec.message());
    }
    fs::remove_all(old, ec);
    return;
  }
  fs::rename(staged, dest, ec);
  SEGMUX_CHECK(!ec, "cannot move the package into '", dest, "': ", ec.message());
}

}  // namespace segmux::package
