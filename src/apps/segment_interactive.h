// `segmux segment IMAGE... --point x,y[:neg] [--box x,y,w,h] [--multimask] [--mask-input FILE.npy]
// [--logits-out FILE.npy] [--return-logits]`: the SAM-1-style interactive image predictor
// (pipeline/predictor/image_predictor.h) behind the segment command. Per image STEM in DIR:
//   STEM.json          every candidate mask: index, score (predicted IoU), area, COCO RLE; `best` = argmax score
//   STEM.mask<K>.png   candidate K as an 8-bit PNG (255 = mask)
//   STEM.logits.npy    with --return-logits: f32 (C, H, W) mask logits at the image size
// --logits-out FILE.npy (one image): the low-res logits f32 (C, Hm, Wm) to feed back with --mask-input.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "deploy/model_store/model_store.h"

namespace segmux::apps {

struct InteractiveSegmentArgs {
  std::vector<std::string> points;  // x,y[:neg]
  std::string mask_input, logits_out;
  int mask_input_index = -1;  // which mask of a (C, Hm, Wm) --mask-input file; -1: the file holds one
  bool multimask = false, return_logits = false, interactive = false;
};

// Adds the interactive options to `app` (the segment command's).
void add_interactive_options(CLI::App& app, InteractiveSegmentArgs& a);

// Whether the command line asks for the interactive predictor (any of its options).
bool interactive_requested(const InteractiveSegmentArgs& a);

// Checks every input (images, points, the box, the mask input) before the model loads, runs the
// predictor on each image and writes the outputs (staged: a failure leaves DIR as it was).
// `boxes`: the segment command's --box values (at most one here, x,y,w,h, no :neg).
int run_interactive_segment(const std::vector<std::string>& images, const std::vector<std::string>& boxes,
                            const std::string& out_dir, pipeline::ModelSource src, bool demo, bool quiet, bool json,
                            const InteractiveSegmentArgs& a);

}  // namespace segmux::apps
