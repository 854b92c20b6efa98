// --precision fp32|bf16 for the commands that compile a checkpoint on first use (track, segment,
// serve, bench-frame, parity --video): how the candidates' MatMul/Gemm/Conv weights are compiled.
// fp32 stays the default: on the fixture model bf16 changes what the official code itself detects and
// tracks (docs/bf16.md: the official predictor in bf16 against fp32, ours against both), so bf16 cannot
// be checked frame by frame; fp32 is exactly the official code (CI's parity). bf16 is one flag away.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "deploy/model_store/model_store.h"

namespace segmux::apps {

// "" when `s` names a precision, else why not (the option's error message).
std::string precision_problem(const std::string& s);

// The help of the commands that compile a --weights checkpoint on first use (track, segment, serve).
inline constexpr const char* kCheckpointPrecisionHelp =
    "fp32 or bf16: how a --weights checkpoint is compiled (bf16: MatMul/Gemm/Conv weights in bf16; its difference "
    "from fp32 on the fixtures is in docs/track.md)";

// Adds --precision to `app`, validated before the command runs; `precision` keeps its value as the
// default, which the help text names.
CLI::Option* add_precision_option(CLI::App& app, std::string& precision, const std::string& help);

// After parsing: a --precision given on the command line needs a checkpoint to compile (a package's
// precision was fixed by `segmux deploy`) and our engine (ONNX Runtime runs the exported fp32 ONNX).
void check_precision_use(const CLI::App& app, const pipeline::ModelSource& src);

}  // namespace segmux::apps
