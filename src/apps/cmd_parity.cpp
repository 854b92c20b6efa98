// segmux parity FIXTURE_DIR: every deployment candidate against a golden fixture folder (reference
// kernels, optimized kernels, ONNX Runtime on the exported model; or, with --device cuda, the compiled
// candidates on the GPU); non-zero exit on any miss.
#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/precision_option.h"
#include "verify/sam31/parity.h"
#include "verify/video_parity.h"

namespace segmux::apps {

namespace {

int parity_main(int argc, char** argv) {
  CLI::App app{
      "Check the SAM 3.1 deployment candidates against a golden fixture folder: build each from the "
      "folder's config.json and weights, run it on the folder's module inputs through our runtime and "
      "through ONNX Runtime, compare every output with the official tensors. Exits 1 on any miss.",
      "segmux parity"};
  verify::ParityOptions opt;
  bool no_ref = false, no_opt = false, no_comp = false, no_ort = false, no_tok = false, video = false;
  std::string cache_dir, model_dir;
  app.add_option("fixture_dir", opt.fixture_dir, "fixture folder (config.json, weights.*, modules/)")->required();
  app.add_option("--weights", opt.weights_files, "weights file(s) to use (default: every weights.* in the folder)");
  app.add_option("--candidate", opt.candidates,
                 "only these candidates (default: all; 'tokenizer' names the tokenizer check)");
  add_threads_option(app, opt.num_threads, "threads per run");
  app.add_flag("--no-reference", no_ref, "skip the reference-kernel runs");
  app.add_flag("--no-optimized", no_opt, "skip the optimized-kernel runs");
  app.add_flag("--no-compiled", no_comp, "skip the compiled (passes + memory plan) runs");
  app.add_flag("--no-ort", no_ort, "skip ONNX Runtime");
  app.add_flag("--no-tokenizer", no_tok, "skip the tokenizer cases");
  app.add_flag("--video", video,
               "end to end instead: the compiled candidates and the C++ predictor on the folder's video and "
               "prompt against video/trace.json (ids, probs, masks IoU >= 0.99 or <= 16 px for small masks)");
  app.add_option("--cache-dir", cache_dir, "with --video: where the compiled candidates are cached");
  std::string engine = "smx";
  app.add_option("--engine", engine, "with --video: smx (default, our runtime) or ort (ONNX Runtime on the ONNX files)")
      ->check(CLI::IsMember({"smx", "ort"}));
  app.add_option("--model", model_dir, "with --video: run this model folder or package (segmux deploy) instead");
  std::string trace_calls;
  app.add_option("--trace-calls", trace_calls,
                 "with --video: write one JSON line per tracker call (frame, objects, buckets, memory frames, mask "
                 "areas) to this file, to diff with tools/fixtures/probe_calls.py on the official code");
  std::string precision = "fp32";  // CI's parity is fp32: bf16 only on request
  add_precision_option(app, precision,
                       "with --video and the fixture's weights: fp32 or bf16 (MatMul/Gemm/Conv weights in bf16), "
                       "checked against the same tolerances");
  bool requests = false;
  app.add_flag("--requests", requests,
               "with --video: replay the trace's request list (video/trace.json \"requests\": text, points, "
               "remove_object, propagations, reset_session) and compare every response; exit 1 if any differs");
  std::string device = "cpu";
  bool tf32 = false;
  app.add_option("--device", device,
                 "cpu (default: every backend above) or cuda: the compiled candidates on the GPU only (docs/cuda.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_flag("--tf32", tf32, "with --device cuda: fp32 GEMMs on TF32 tensor cores");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(device == "cpu" || !video, "--device cuda does not run --video yet (docs/cuda.md)");
  SEGMUX_USAGE_CHECK(!tf32 || device == "cuda", "--tf32 goes with --device cuda");
  SEGMUX_USAGE_CHECK(video || app.count("--precision") == 0,
                     "--precision goes with --video (the candidate checks compare fp32 builds)");
  SEGMUX_USAGE_CHECK(model_dir.empty() || app.count("--precision") == 0,
                     "--precision and --model exclude each other (a package's precision was chosen by segmux deploy)");
  SEGMUX_USAGE_CHECK(!requests || video, "--requests goes with --video");
  if (video) {
    verify::VideoParityOptions v;
    v.fixture_dir = opt.fixture_dir;
    if (!opt.weights_files.empty()) v.weights = opt.weights_files.front();
    v.cache_dir = cache_dir;
    v.model_dir = model_dir;
    v.num_threads = opt.num_threads;
    v.engine = engine;
    v.trace_calls = trace_calls;
    v.precision = precision;
    if (requests) {
      const verify::RequestReplayReport rep = verify::run_request_replay(v, std::cout);
      int differ = 0;
      for (const auto& q : rep.requests) differ += !q.matched;
      std::cout << "request replay: " << rep.requests.size() << " requests, " << differ << " differ -> "
                << (differ == 0 && !rep.requests.empty() ? "PASS" : "FAIL") << "\n";
      return differ == 0 && !rep.requests.empty() ? 0 : 1;
    }
    return verify::run_video_parity(v, std::cout).passed() ? 0 : 1;
  }
  opt.reference = !no_ref;
  opt.optimized = !no_opt;
  opt.onnxruntime = !no_ort;
  opt.compiled = !no_comp;
  opt.tokenizer = !no_tok;
  if (device == "cuda") {  // the GPU against the fixture's official tensors; the CPU backends stay off
    opt.reference = opt.optimized = opt.onnxruntime = opt.compiled = opt.tokenizer = false;
    opt.cuda = true;
    opt.cuda_tf32 = tf32;
  }
  verify::ParityReport r = verify::run_parity(opt, &std::cout);
  return r.passed() ? 0 : 1;
}

CommandRegistration reg("parity", "check the SAM 3.1 candidates against a golden fixture folder", parity_main);

}  // namespace

}  // namespace segmux::apps
