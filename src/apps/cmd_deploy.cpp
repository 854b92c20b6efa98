// segmux deploy CKPT -o PKG: the route's deliverable as one self-contained, verified folder (a model
// folder `--model PKG` runs, plus ONNX, contracts, inventory, verification, report, manifest;
// docs/deploy.md). Built in PKG.partial-<pid> beside PKG and renamed into place: a failure leaves
// nothing.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "apps/cli.h"
#include "apps/commands.h"
#include "deploy/model_store/model_store.h"
#include "deploy/package/package.h"
#include "deploy/package/package_docs.h"
#include "io/files.h"
#include "io/paths.h"
#include "models/sam31/tokenizer.h"
#include "runtime/offline_model.h"
#include "verify/package_verify.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

int deploy_main(int argc, char** argv) {
  CLI::App app{
      "Make a deployment package from a SAM 3.1 checkpoint: compiled candidates (.smx) per precision and "
      "target, standard and slimmed ONNX, contracts, inventory, the tokenizer, a verification of every "
      "candidate (our runtime, reference kernels, ONNX Runtime), a report and a sha256 manifest. The "
      "package is a model folder: segmux track --model PKG runs it, segmux verify-package PKG checks it.",
      "segmux deploy"};
  std::string ckpt, out, config, vocab, precisions = "fp32", targets = "native", reference = "kernels";
  bool force = false, no_ort = false, in_process = false;
  int threads = 2;
  uint64_t seed = verify::PackageVerifyOptions{}.seed;
  app.add_option("checkpoint", ckpt, "SAM 3.1 checkpoint (.pt or .safetensors with the official key names)")
      ->required();
  app.add_option("-o,--output,--out", out, "package folder to create")->required();
  app.add_option("--config", config, "model config JSON (default: full-size SAM 3.1)");
  app.add_option("--vocab", vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  app.add_option("--precision", precisions, "comma-separated: fp32 (default), bf16; the first goes to the root");
  app.add_option("--target", targets,
                 "comma-separated ISAs: native (default: this machine's), generic, x86-64-avx512; the first goes "
                 "to the root");
  add_threads_option(app, threads, "CPU threads");
  app.add_option("--seed", seed, "seed of the verification inputs");
  app.add_option("--reference", reference,
                 "what the candidates are compared with: kernels (our reference kernels; default) or onnxruntime "
                 "(much faster at full size)")
      ->check(CLI::IsMember({"kernels", "onnxruntime"}));
  app.add_flag("--no-ort", no_ort, "do not run ONNX Runtime in the verification");
  app.add_flag("--force", force, "replace an existing package folder");
  app.add_flag("--in-process", in_process,
               "verify every compiled file in this process (default: each in a child process, so peak memory is "
               "one file's)");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;

  package::PackageOptions opt;
  opt.checkpoint = ckpt;
  opt.precisions = split_list(precisions);
  opt.targets = split_list(targets);
  try {
    package::check_variant_lists(opt.precisions, opt.targets);
  } catch (const Error& e) {
    usage_fail("--precision/--target: ", e.what());
  }
  SEGMUX_USAGE_CHECK(
      !fs::path(out).filename().empty() && fs::path(out).filename() != "." && fs::path(out).filename() != "..", "-o '",
      out, "': give the package folder's name (e.g. -o pkg/sam31)");
  SEGMUX_USAGE_CHECK(force || !fs::exists(fs::symlink_status(out)), "-o '", out,
                     "' already exists (remove it, or --force to replace it)");
  SEGMUX_CHECK(fs::is_regular_file(ckpt), "cannot read checkpoint '", ckpt, "'");
  const sam31::ModelConfig cfg =
      config.empty() ? sam31::default_config() : verify::load_model_or_fixture_config(config);
  opt.vocab = sam31::Tokenizer::find_vocabulary(vocab.empty() ? ckpt : vocab);
  // Recorded inside the package (model.json, manifest, every .smx) with file names only, so nothing in
  // it names the folders it was made from; report.md records the command exactly as typed.
  std::string typed;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    typed += (i ? " " : "segmux ") + a;
    opt.command_line +=
        (i ? " " : "segmux ") + (a.find('/') == std::string::npos ? a : fs::path(a).filename().string());
  }

  auto log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  const auto t0 = std::chrono::steady_clock::now();
  const std::string started = utc_now();
  const fs::path dest = fs::absolute(out).lexically_normal();
  make_directories(dest.parent_path().string());
  const std::string marker = dest.filename().string() + ".partial-";
  remove_abandoned_partials(dest.parent_path().string(), marker);
  const std::string stage = (dest.parent_path() / (marker + std::to_string(::getpid()))).string();
  fs::remove_all(stage);
  try {
    const package::BuildRecord rec = package::build_package(cfg, opt, stage, log);
    log("verifying every candidate (our runtime and ONNX Runtime against the " + reference + " reference)");
    verify::PackageVerifyOptions vo;
    vo.num_threads = threads;
    vo.seed = seed;
    vo.onnxruntime = !no_ort;
    vo.reference = reference;
    if (!in_process) vo.child_exe = "/proc/self/exe";
    const verify::PackageVerification ver = verify::verify_package_models(stage, vo, &std::cerr);
    const nlohmann::json vj = ver.to_json();
    write_text(stage + "/verification.json", vj.dump(2));
    write_text(stage + "/verification.md", ver.to_markdown());

    package::ReportInputs ri;
    ri.command_line = typed;
    ri.package_dir = out;
    ri.checkpoint = ckpt;
    ri.checkpoint_sha256 = rec.checkpoint_sha256;
    ri.checkpoint_bytes = fs::file_size(ckpt);
    ri.build_identity = pipeline::build_identity();
    ri.host_isa = host_isa();
    ri.started_utc = started;
    ri.cfg = cfg;
    ri.precisions = opt.precisions;
    for (const auto& t : opt.targets) ri.isas.push_back(package::resolve_target(t));
    ri.build_stages = rec.stages;
    ri.slim = rec.slim;
    ri.verification = vj;
    ri.verify_seconds = ver.seconds;
    ri.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_text(stage + "/report.md", package::deploy_report(ri, stage));
    package::write_manifest(stage, {{"checkpoint",
                                     {{"file", fs::path(ckpt).filename().string()},
                                      {"size", ri.checkpoint_bytes},
                                      {"sha256", rec.checkpoint_sha256}}},
                                    {"config", nlohmann::json::parse(sam31::config_to_json(cfg))},
                                    {"precisions", ri.precisions},
                                    {"targets", ri.isas},
                                    {"build", ri.build_identity},
                                    {"command_line", opt.command_line},
                                    {"verification", vj["verdict"]},
                                    {"verification_reference", reference},
                                    {"verification_seed", seed}});
    if (ver.verdict() == verify::Verdict::fail) {
      std::cerr << ver.to_markdown();
      fail("the verification failed (table above): no package written");
    }
    package::move_into_place(stage, dest.string(), force);
    std::printf("wrote %s (%s, verification %s, %.1f s)\n", out.c_str(), cfg.name.c_str(),
                std::string(verify::verdict_name(ver.verdict())).c_str(), ri.total_seconds);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(stage, ec);
    throw;
  }
  return 0;
}

CommandRegistration reg("deploy", "make a verified, portable deployment package from a checkpoint", deploy_main);

}  // namespace

}  // namespace segmux::apps
