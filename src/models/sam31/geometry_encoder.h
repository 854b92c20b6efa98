// SAM 3.1's SequenceGeometryEncoder (geometry_encoders.py) for box exemplars, as standard ONNX ops:
// per box, label embedding + Linear(cxcywh) + Conv(RoIAlign 7x7 of the normed level-2 features) +
// Linear(sine encoding of (cx, cy) with (h, w)); then the CLS token, final_proj + norm, the encoder
// layers (box slots that hold no box are masked as keys) and the final norm.
//
// The box count is fixed (cfg.detector_max_boxes) with a padding mask; the official code concatenates
// [valid boxes, CLS] right-padded (concat_padded_sequences), ours keeps [box slots, CLS]. Every later
// use (self-attention, the prompt's cross-attentions, the scoring's mean) masks the padded slots, so
// the valid tokens are the official ones; only their positions in the sequence differ.
#pragma once
#include <functional>
#include <string>

#include "ir/builder.h"
#include "models/sam31/config.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

struct GeometryEncoderInputs {
  int image = -1;        // level-2 detector features, seq-first (HW, B, D)
  int boxes = -1;        // (B, N, 4) f32, normalised cxcywh
  int box_labels = -1;   // (B, N) i64, 1 positive / 0 negative
  int box_padding = -1;  // (B, N) bool, True = empty slot
};

struct GeometryEncoderOut {
  int tokens = -1;      // (N+1, B, D): the N box slots, then the CLS token
  int padding = -1;     // (B, N+1) bool, True = padding
  int box_tokens = -1;  // (N, B, D) box tokens before final_proj (label + direct + pool + pos_enc)
  int pooled = -1;      // (B*N, D, r, r) RoIAlign output
  int pos_enc = -1;     // (N, B, D+2) encode_boxes(cx, cy, w, h)
};

// One encoder layer: (prefix, tgt (S,B,D), tgt key padding (B,S)) -> (S,B,D).
using GeometryLayerFn = std::function<int(const std::string& prefix, int tgt, int tgt_padding)>;

GeometryEncoderOut build_geometry_encoder(ir::GraphBuilder& b, const Weights& w, const ModelConfig& cfg, int64_t batch,
                                          const GeometryEncoderInputs& in, const GeometryLayerFn& layer);

}  // namespace segmux::sam31
