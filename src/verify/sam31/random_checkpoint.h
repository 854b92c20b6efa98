// Random SAM 3.1 checkpoints with exactly the official keys and shapes (for the demo model, tests and the
// full-size check when the real weights are not at hand), and the ViT RoPE tables they contain.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/config.h"
#include "models/sam31/state_dict.h"

namespace segmux::verify {

// Edits that make a broken variant of a checkpoint (to test that loading refuses it).
struct CheckpointEdits {
  std::vector<std::string> drop;                            // keys left out
  std::vector<std::pair<std::string, std::string>> rename;  // key -> new name
  std::vector<std::string> mis_shape;                       // keys whose first dimension gets +1
};

// Writes a PyTorch checkpoint with exactly expected_state_dict(cfg) (keys, order, shapes, complex64
// RoPE tables computed from the config, everything else seeded noise: uniform in [-0.05, 0.05)),
// streaming one tensor at a time so a full-size file never has to fit in memory.
void write_random_checkpoint(const std::string& path, const sam31::ModelConfig& cfg, uint64_t seed,
                             const CheckpointEdits& edits = {});

// 2-D axial RoPE table of one ViT block as the official vitdet code computes it (f32, [N, head_dim/2, 2]):
// window blocks use the window grid at scale 1; global blocks use the full token grid with positions
// scaled by window/grid (interpolated RoPE).
Tensor vit_rope_table(const sam31::ModelConfig& cfg, int block);

}  // namespace segmux::verify
