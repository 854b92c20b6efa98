#include "models/sam31/geometry_encoder.h"

#include "models/sam31/layers.h"

namespace segmux::sam31 {

namespace L = layers;

namespace {

const std::string kGeo = "detector.geometry_encoder";

// box_ops.box_cxcywh_to_xyxy on the last axis.
int cxcywh_to_xyxy(ir::GraphBuilder& b, int box) {
  auto p = L::split(b, box, -1, {1, 1, 1, 1});
  int hw = L::mul_scalar(b, p[2], 0.5f), hh = L::mul_scalar(b, p[3], 0.5f);
  return L::concat(b, {L::sub(b, p[0], hw), L::sub(b, p[1], hh), L::add(b, p[0], hw), L::add(b, p[1], hh)}, -1);
}

// _encode_boxes' pooling: RoIAlign (torchvision roi_align, aligned=False, adaptive sampling) of the
// normed features at the boxes scaled to the grid, then boxes_pool_project (Conv r x r). (N,B,D).
int pool_boxes(ir::GraphBuilder& b, const Weights& w, const ModelConfig& cfg, int64_t B, int feat, int boxes,
               int* pooled_out) {
  const int64_t N = cfg.detector_max_boxes, D = cfg.d_model, G = cfg.token_grid(), r = cfg.geo_roi_size;
  const float g = float(G);
  int xyxy = L::mul(b, cxcywh_to_xyxy(b, boxes), L::const_f32(b, {4}, {g, g, g, g}, "roi_scale"));
  std::vector<int64_t> batch_index;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t n = 0; n < N; ++n) batch_index.push_back(i);
  int pooled = b.op1("RoiAlign", {feat, L::reshape(b, xyxy, {B * N, 4}), L::ints(b, batch_index)},
                     {{"mode", std::string("avg")},
                      {"coordinate_transformation_mode", std::string("output_half_pixel")},
                      {"output_height", int64_t(r)},
                      {"output_width", int64_t(r)},
                      {"sampling_ratio", int64_t(0)},
                      {"spatial_scale", 1.0f}});
  *pooled_out = pooled;
  int proj = L::conv2d(b, w, pooled, kGeo + ".boxes_pool_project");  // B*N, D, 1, 1
  return L::transpose(b, L::reshape(b, proj, {B, N, D}), {1, 0, 2});
}

}  // namespace

GeometryEncoderOut build_geometry_encoder(ir::GraphBuilder& b, const Weights& w, const ModelConfig& cfg, int64_t B,
                                          const GeometryEncoderInputs& in, const GeometryLayerFn& layer) {
  const int64_t D = cfg.d_model, G = cfg.token_grid();
  GeometryEncoderOut out;
  // img_pre_norm, back to NCHW for the pooling.
  int normed = L::layer_norm(b, w, in.image, kGeo + ".img_pre_norm");
  int feat = L::reshape(b, L::transpose(b, normed, {1, 2, 0}), {B, D, G, G});

  int boxes = L::transpose(b, in.boxes, {1, 0, 2});  // N,B,4 (the official seq-first layout)
  int embed = L::linear(b, w, boxes, kGeo + ".boxes_direct_project");
  embed = L::add(b, embed, pool_boxes(b, w, cfg, B, feat, in.boxes, &out.pooled));
  // pos_enc.encode_boxes: sine encoding of (cx, cy) in the order (y, x), then h, w.
  auto p = L::split(b, boxes, -1, {2, 1, 1});
  out.pos_enc = L::concat(b, {L::sine_embed_for_position(b, p[0], int(D)), p[2], p[1]}, -1);
  embed = L::add(b, embed, L::linear(b, w, out.pos_enc, kGeo + ".boxes_pos_enc_project"));
  int labels = L::transpose(b, in.box_labels, {1, 0});  // N,B
  int type = L::gather(b, L::param(b, w, kGeo + ".label_embed.weight"), labels, 0);
  out.box_tokens = L::add(b, type, embed);

  int cls = L::expand(b, L::reshape(b, L::param(b, w, kGeo + ".cls_embed.weight"), {1, 1, D}), {1, B, D});
  int x = L::concat(b, {out.box_tokens, cls}, 0);
  out.padding = L::concat(b, {in.box_padding, b.constant(Tensor(DType::boolean, {B, 1}), "cls_padding")}, 1);
  x = L::layer_norm(b, w, L::linear(b, w, x, kGeo + ".final_proj"), kGeo + ".norm");
  for (int l = 0; l < cfg.geo_layers; ++l) x = layer(kGeo + ".encode." + std::to_string(l), x, out.padding);
  out.tokens = L::layer_norm(b, w, x, kGeo + ".encode_norm");
  return out;
}

}  // namespace segmux::sam31
