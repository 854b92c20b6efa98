// The built-in demo model: a tiny configuration (the fixtures' reduced sizes) with seeded random
// weights under the official key names and a byte-level vocabulary, compiled into a model folder.
// It proves the whole path runs; its masks are meaningless.
#pragma once
#include <string>

#include "deploy/model_store/model_store.h"
#include "models/sam31/config.h"

namespace segmux::verify {

sam31::ModelConfig demo_config();

// The demo model folder under `cache_dir` (default: the model cache), generated on first use.
std::string ensure_demo_model(const std::string& cache_dir, const pipeline::LogFn& log);

}  // namespace segmux::verify
