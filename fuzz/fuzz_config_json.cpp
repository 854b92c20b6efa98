// libFuzzer target: config JSON (flat and fixture forms) and the untrusted-JSON parser behind every
// JSON file segmux reads must turn any text into a value or a segmux::Error: no crash, no deep
// recursion, no raw library exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/json_limits.h"
#include "io_seeds.h"
#include "models/sam31/config.h"
#include "verify/sam31/fixture_config.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    return std::vector<std::string>{
        segmux::sam31::config_to_json(segmux::sam31::default_config()),
        R"({"image_size": 224, "vit_global": [0, 2], "neck_scale_factors": [4, 2, 1], "name": "small"})",
        R"({"reduced_vs_official": {"image_size": {"reduced": 224, "official": 1008}, "seed": {"reduced": 0},
            "vit_depth": {"reduced": 4}}, "derived": {"vocab_size": 49408, "text_context_length": 32,
            "token_grid": [16, 16]}, "control_plane_and_tracker_settings": {"t": {"num_maskmem": 7}}})",
        R"({"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
    };
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    segmux::sam31::ModelConfig c = segmux::sam31::parse_config(text, "fuzz config");
    // A config that passed validation must serialise and parse back to itself.
    const std::string again = segmux::sam31::config_to_json(c);
    if (segmux::sam31::config_to_json(segmux::sam31::parse_config(again, "round trip")) != again) __builtin_trap();
  } catch (const segmux::Error&) {
  }
  try {
    segmux::verify::parse_fixture_config(text, "fuzz fixture config");
  } catch (const segmux::Error&) {
  }
  try {
    nlohmann::ordered_json j = segmux::parse_untrusted_ordered_json(text, "fuzz json", {.max_depth = 32});
    const std::string d = segmux::describe_json(j) + j.dump();  // bounded depth: dump cannot recurse deeply
    if (d.empty()) __builtin_trap();
  } catch (const segmux::Error&) {
  }
  return 0;
}
