// Candidate `interactive_decoder`: the SAM 3.1 tracker's mask-as-output path for ONE object
// (official _use_mask_as_output on a frame where a mask is given: new objects from detections,
// reconditioning). The mask itself becomes the output (mask * 20 - 10); the interactive SAM heads run
// only to produce the object pointer the memory bank stores for that frame:
//   pix = interactive level-2 features + interactivity_no_mem_embed
//   dense = prompt-encoder mask_downscaling(interactive_mask_downsample(mask))
//   tokens = [obj_score, iou, 4 mask tokens, 2 x not_a_point] -> TwoWayTransformer(pix + dense, PE)
//   ptr = interactive_obj_ptr_proj(mask token 0), mixed with no_obj_ptr_linear twice: by the SAM
//   object score, then by whether the mask is non-empty (as the official code does).
// Mask upscaling and IoU heads are not computed: nothing downstream consumes them.
#pragma once
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/sam_heads.h"  // the SAM pieces this candidate is built from (moved there)
#include "models/sam31/weights.h"

namespace segmux::sam31 {

ir::Graph build_interactive_decoder(const ModelConfig& cfg, const Weights& w);
contract::Description interactive_decoder_contract(const ModelConfig& cfg);

}  // namespace segmux::sam31
