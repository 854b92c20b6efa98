// Candidate `detector`: SAM 3.1 grounding (Sam3Image.forward_grounding) as an IR graph, for a text
// prompt and box exemplars: geometry encoder (geometry_encoder.h: cfg.detector_max_boxes box slots with
// a padding mask; no box = the CLS token alone, the text-only grounding), fusion encoder, DETR decoder with
// presence token and box relative-position bias (boxRPB "log"), dot-product scoring with the joint
// (presence-weighted) final logit of supervise_joint_box_scores, and the segmentation head.
//
// The text batch (language_features / language_mask from the text_encoder, e.g. 3 prompts in the
// video run) is an input as a whole; `text_ids` picks, per grounding batch entry, which prompt it
// grounds (the official find_input.text_ids; the video run grounds prompt 0).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

struct DetectorOptions {
  int batch = 1;               // images (frames) per run; each grounds one prompt
  int num_texts = 3;           // prompts in the text batch ([prompt, "visual", "geometric"] in the video run)
  bool debug_outputs = false;  // also output intermediate tensors (dbg_*)
};

ir::Graph build_detector(const ModelConfig& cfg, const Weights& w, const DetectorOptions& opt = {});
ir::Graph build_detector_default(const ModelConfig& cfg, const Weights& w);
contract::Description detector_contract(const ModelConfig& cfg);

}  // namespace segmux::sam31
