// segmux verify-package PKG: a package's files against its manifest (sizes, sha256; missing, extra,
// linked and escaping paths refused by name), then the verification of every candidate again.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "apps/cli.h"
#include "apps/commands.h"
#include "deploy/package/package.h"
#include "verify/package_verify.h"

namespace segmux::apps {

namespace {

int verify_package_main(int argc, char** argv) {
  CLI::App app{
      "Check a deployment package made by segmux deploy: every file's size and sha256 against manifest.json "
      "(a missing, truncated, modified, unlisted or linked file is refused by name), then run every "
      "candidate again as the package's verification did. Exit 1 when anything fails.",
      "segmux verify-package"};
  std::string dir, reference, child_file;
  bool files_only = false, no_ort = false, in_process = false;
  int threads = 2;
  uint64_t seed = 0;
  app.add_option("package", dir, "package folder")->required();
  app.add_flag("--files-only", files_only, "check the manifest only (no model runs)");
  app.add_option("--reference", reference,
                 "what the candidates are compared with: kernels (our reference kernels) or onnxruntime (much "
                 "faster at full size); default: what the package's verification used")
      ->check(CLI::IsMember({"kernels", "onnxruntime"}));
  app.add_flag("--no-ort", no_ort, "do not run ONNX Runtime");
  add_threads_option(app, threads, "CPU threads");
  auto* seed_opt = app.add_option("--seed", seed, "seed of the verification inputs (default: the package's)");
  app.add_flag("--in-process", in_process,
               "verify every compiled file in this process (default: each in a child process, so peak memory is "
               "one file's)");
  // Internal: the child process of one compiled file's verification (verify::PackageVerifyOptions::child_exe).
  app.add_option("--child-file", child_file)->group("");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  if (!child_file.empty()) {  // the parent checked the manifest (or is deploy, before there is one)
    verify::PackageVerifyOptions vo;
    vo.num_threads = threads;
    vo.onnxruntime = !no_ort;
    vo.reference = reference.empty() ? "kernels" : reference;
    vo.seed = seed;
    return verify::verify_package_file_child(dir, child_file, vo);
  }

  const package::ManifestCheck mc = package::check_manifest(dir);
  if (!mc.ok()) {
    for (const std::string& p : mc.problems) std::fprintf(stderr, "segmux: verify-package: %s\n", p.c_str());
    fail("package '", dir, "' failed its manifest check (", mc.problems.size(), " problem",
         mc.problems.size() == 1 ? "" : "s", "): ", mc.problems.front());
  }
  std::printf("manifest: %d files, %.1f MiB, sizes and sha256 match\n", mc.files_checked,
              double(mc.bytes_checked) / (1024.0 * 1024.0));
  if (files_only) return 0;
  const nlohmann::json manifest = package::read_manifest(dir);
  verify::PackageVerifyOptions vo;
  vo.num_threads = threads;
  vo.onnxruntime = !no_ort;
  vo.reference = reference.empty() ? manifest.value("verification_reference", "kernels") : reference;
  vo.seed = seed_opt->count() ? seed : manifest.value("verification_seed", verify::PackageVerifyOptions{}.seed);
  if (!in_process) vo.child_exe = "/proc/self/exe";
  const verify::PackageVerification ver = verify::verify_package_models(dir, vo, &std::cerr);
  std::cout << ver.to_markdown();
  std::printf("verification: %s (%zu comparisons, %.1f s; at deploy: %s)\n",
              std::string(verify::verdict_name(ver.verdict())).c_str(), ver.rows.size(), ver.seconds,
              manifest.value("verification", "?").c_str());
  return ver.verdict() == verify::Verdict::fail ? 1 : 0;
}

CommandRegistration reg("verify-package", "check a deployment package's files and re-run its verification",
                        verify_package_main);

}  // namespace

}  // namespace segmux::apps
