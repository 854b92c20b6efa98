#include "models/sam31/detector.h"
#include "models/sam31/tensor_names.h"

#include <cmath>

#include "models/sam31/contract.h"
#include "models/sam31/geometry_encoder.h"
#include "models/sam31/layers.h"

namespace segmux::sam31 {

namespace L = layers;

namespace {

const std::string kDet = "detector";
const std::string kEnc = "detector.transformer.encoder";
const std::string kDec = "detector.transformer.decoder";
const std::string kSeg = "detector.segmentation_head";
const std::string kScore = "detector.dot_prod_scoring";
constexpr int kPixelDecoderGroups = 8;  // nn.GroupNorm(8, hidden_dim) in PixelDecoder

struct Ctx {
  ir::GraphBuilder& b;
  const Weights& w;
  const ModelConfig& cfg;
  int64_t B;
};

// Pre-norm TransformerEncoderLayer (encoder.py forward_pre) used by the geometry encoder
// (seq-first, pos on cross-attention keys only) and the fusion encoder (batch-first, pos on
// self-attention q/k only).
int encoder_layer(Ctx& c, const std::string& p, int tgt, int tgt_pos, int memory, int memory_pos,
                  int memory_key_padding_mask, bool seq_first, int tgt_key_padding_mask = -1) {
  auto& b = c.b;
  L::MhaOptions mo;
  mo.heads = c.cfg.attn_heads;
  mo.seq_first = seq_first;
  L::MhaOptions so = mo;
  so.key_padding_mask = tgt_key_padding_mask;
  int t2 = L::layer_norm(b, c.w, tgt, p + ".norm1");
  int qk = tgt_pos >= 0 ? L::add(b, t2, tgt_pos) : t2;
  tgt = L::add(b, tgt, L::multihead_attention(b, c.w, p + ".self_attn", qk, qk, t2, so));
  t2 = L::layer_norm(b, c.w, tgt, p + ".norm2");
  L::MhaOptions co = mo;
  co.key_padding_mask = memory_key_padding_mask;
  int key = memory_pos >= 0 ? L::add(b, memory, memory_pos) : memory;
  tgt = L::add(b, tgt, L::multihead_attention(b, c.w, p + ".cross_attn_image", t2, key, memory, co));
  t2 = L::layer_norm(b, c.w, tgt, p + ".norm3");
  t2 = L::linear(b, c.w, L::relu(b, L::linear(b, c.w, t2, p + ".linear1")), p + ".linear2");
  return L::add(b, tgt, t2);
}

// SequenceGeometryEncoder on the box exemplars (geometry_encoder.h), its layers being the pre-norm
// encoder layer above (seq-first, pos on the cross-attention keys, padded box slots masked).
GeometryEncoderOut geometry_encoder(Ctx& c, int img, int img_pos, int boxes, int box_labels, int box_padding) {
  ir::Scope s(c.b, "geometry_encoder");
  return build_geometry_encoder(c.b, c.w, c.cfg, c.B, GeometryEncoderInputs{img, boxes, box_labels, box_padding},
                                [&](const std::string& p, int tgt, int tgt_padding) {
                                  return encoder_layer(c, p, tgt, -1, img, img_pos, -1, true, tgt_padding);
                                });
}

// TransformerEncoderFusion: image tokens (HW,B,D) attend to themselves (pos on q/k) and to the
// prompt (S,B,D) with its padding mask. Returns memory (HW,B,D).
int fusion_encoder(Ctx& c, int img, int img_pos, int prompt, int prompt_mask) {
  auto& b = c.b;
  ir::Scope s(b, "fusion_encoder");
  int x = L::transpose(b, img, {1, 0, 2});
  int pos = L::transpose(b, img_pos, {1, 0, 2});
  int pr = L::transpose(b, prompt, {1, 0, 2});
  for (int l = 0; l < c.cfg.fusion_enc_layers; ++l)
    x = encoder_layer(c, kEnc + ".layers." + std::to_string(l), x, pos, pr, -1, prompt_mask, false);
  return L::transpose(b, x, {1, 0, 2});
}

// cxcywh -> xyxy on the last axis (box_ops.box_cxcywh_to_xyxy).
int cxcywh_to_xyxy(ir::GraphBuilder& b, int box) {
  auto p = L::split(b, box, -1, {1, 1, 1, 1});
  int hw = L::mul_scalar(b, p[2], 0.5f), hh = L::mul_scalar(b, p[3], 0.5f);
  return L::concat(b, {L::sub(b, p[0], hw), L::sub(b, p[1], hh), L::add(b, p[0], hw), L::add(b, p[1], hh)}, -1);
}

// TransformerDecoder._get_rpb_matrix with boxRPB = "log": (B, heads, Q, H*W) additive bias.
int box_rpb(Ctx& c, int ref, int64_t H, int64_t W) {
  auto& b = c.b;
  ir::Scope s(b, "box_rpb");
  int xyxy = L::transpose(b, cxcywh_to_xyxy(b, ref), {1, 0, 2});  // B,Q,4
  std::vector<float> ch(static_cast<size_t>(H)), cw(static_cast<size_t>(W));
  for (int64_t i = 0; i < H; ++i) ch[size_t(i)] = float(i) / float(H);
  for (int64_t i = 0; i < W; ++i) cw[size_t(i)] = float(i) / float(W);
  auto log_scale = [&](int d) {
    int d8 = L::mul_scalar(b, d, 8.0f);
    int l2 = L::div(b, b.op1("Log", {L::add_scalar(b, b.op1("Abs", {d8}), 1.0f)}), L::scalar(b, float(std::log(2.0))));
    return L::div(b, L::mul(b, b.op1("Sign", {d8}), l2), L::scalar(b, 3.0f));  // / log2(8)
  };
  int ys = L::gather(b, xyxy, L::ints(b, {1, 3}), -1);  // B,Q,2
  int xs = L::gather(b, xyxy, L::ints(b, {0, 2}), -1);
  int dy = L::sub(b, L::const_f32(b, {H, 1}, ch, "coords_h"), L::unsqueeze(b, ys, {2}));  // B,Q,H,2
  int dx = L::sub(b, L::const_f32(b, {W, 1}, cw, "coords_w"), L::unsqueeze(b, xs, {2}));  // B,Q,W,2
  dy = L::mlp(b, c.w, log_scale(dy), kDec + ".boxRPB_embed_y", 2);                        // B,Q,H,heads
  dx = L::mlp(b, c.w, log_scale(dx), kDec + ".boxRPB_embed_x", 2);                        // B,Q,W,heads
  int bias = L::add(b, L::unsqueeze(b, dy, {3}), L::unsqueeze(b, dx, {2}));               // B,Q,H,W,heads
  const int64_t Q = b.shape(ref)[0], nh = c.cfg.attn_heads;
  bias = L::reshape(b, bias, {c.B, Q, H * W, nh});
  return L::transpose(b, bias, {0, 3, 1, 2});
}

struct DecoderOut {
  int hs = -1;              // last layer, normed (Q,B,D)
  int boxes = -1;           // last layer's refined boxes (Q,B,4) cxcywh, sigmoid space
  int presence = -1;        // last layer presence logit (1,B)
  int presence_feats = -1;  // (1,B,D)
  std::vector<int> layer_hs, layer_refs, layer_presence;
};

// TransformerDecoder (decoder.py) with TransformerDecoderLayer, presence token, boxRPB, box refine.
DecoderOut decoder(Ctx& c, int memory, int pos, int prompt, int prompt_mask, int64_t H, int64_t W) {
  auto& b = c.b;
  ir::Scope s(b, "decoder");
  const int64_t D = c.cfg.d_model, Q = c.cfg.num_queries, nh = c.cfg.attn_heads;
  int tgt = L::expand(b, L::unsqueeze(b, L::param(b, c.w, kDec + ".query_embed.weight"), {1}), {Q, c.B, D});
  int ref = L::expand(b, L::unsqueeze(b, L::sigmoid(b, L::param(b, c.w, kDec + ".reference_points.weight")), {1}),
                      {Q, c.B, 4});
  int presence = L::expand(b, L::unsqueeze(b, L::param(b, c.w, kDec + ".presence_token.weight"), {1}), {1, c.B, D});
  int zero_pos = L::const_tensor(b, Tensor(DType::f32, {1, c.B, D}), "presence_pos");
  int zero_rpb = L::const_tensor(b, Tensor(DType::f32, {c.B, nh, 1, H * W}), "presence_rpb");
  int mem_key = L::add(b, memory, pos);
  DecoderOut out;
  for (int l = 0; l < c.cfg.dec_layers; ++l) {
    const std::string p = kDec + ".layers." + std::to_string(l);
    ir::Scope ls(b, "layers." + std::to_string(l));
    int qse = L::sine_embed_for_position(b, ref, int(D));          // Q,B,2D
    int qpos = L::mlp(b, c.w, qse, kDec + ".ref_point_head", 2);   // Q,B,D
    int rpb = L::concat(b, {zero_rpb, box_rpb(c, ref, H, W)}, 2);  // B,nh,1+Q,HW
    int t = L::concat(b, {presence, tgt}, 0);
    int tpos = L::concat(b, {zero_pos, qpos}, 0);
    L::MhaOptions mo;
    mo.heads = c.cfg.attn_heads;
    mo.seq_first = true;
    int qk = L::add(b, t, tpos);
    t = L::layer_norm(b, c.w, L::add(b, t, L::multihead_attention(b, c.w, p + ".self_attn", qk, qk, t, mo)),
                      p + ".norm2");
    L::MhaOptions to = mo;
    to.key_padding_mask = prompt_mask;
    int ca = L::multihead_attention(b, c.w, p + ".ca_text", L::add(b, t, tpos), prompt, prompt, to);
    t = L::layer_norm(b, c.w, L::add(b, t, ca), p + ".catext_norm");
    L::MhaOptions io = mo;
    io.attn_bias = rpb;
    ca = L::multihead_attention(b, c.w, p + ".cross_attn", L::add(b, t, tpos), mem_key, memory, io);
    t = L::layer_norm(b, c.w, L::add(b, t, ca), p + ".norm1");
    int ff = L::linear(b, c.w, L::relu(b, L::linear(b, c.w, t, p + ".linear1")), p + ".linear2");
    t = L::layer_norm(b, c.w, L::add(b, t, ff), p + ".norm3");
    presence = L::slice(b, t, 0, 0, 1);
    tgt = L::slice(b, t, 0, 1, Q + 1);

    int normed = L::layer_norm(b, c.w, tgt, kDec + ".norm");
    int delta = L::mlp(b, c.w, normed, kDec + ".bbox_embed", 3);
    int new_ref = L::sigmoid(b, L::add(b, delta, L::inverse_sigmoid(b, ref)));
    int plogit = L::mlp(b, c.w, L::layer_norm(b, c.w, presence, kDec + ".presence_token_out_norm"),
                        kDec + ".presence_token_head", 3);  // 1,B,1
    plogit = L::squeeze(b, plogit, {2});                    // 1,B
    out.layer_hs.push_back(normed);
    out.layer_refs.push_back(ref);
    out.layer_presence.push_back(plogit);
    out.hs = normed;
    out.boxes = new_ref;
    out.presence = plogit;
    out.presence_feats = presence;
    ref = new_ref;
  }
  return out;
}

// DotProductScoring on queries (B,Q,D) against the prompt (S,B,D) -> (B,Q,1), clamped to +-12.
int dot_product_scoring(Ctx& c, int queries, int prompt, int prompt_mask) {
  auto& b = c.b;
  ir::Scope s(b, "dot_prod_scoring");
  int h = L::linear(b, c.w, L::relu(b, L::linear(b, c.w, prompt, kScore + ".prompt_mlp.layers.0")),
                    kScore + ".prompt_mlp.layers.1");
  h = L::layer_norm(b, c.w, L::add(b, h, prompt), kScore + ".prompt_mlp.out_norm");
  int valid = L::cast(b, b.op1("Not", {prompt_mask}), DType::f32);  // B,S
  valid = L::unsqueeze(b, L::transpose(b, valid, {1, 0}), {2});     // S,B,1
  int num_valid =
      L::clip_min(b, b.op1("ReduceSum", {valid, L::ints(b, {0})}, {{"keepdims", ir::AttrValue(int64_t(0))}}),
                  1.0f);  // B,1
  int pooled = b.op1("ReduceSum", {L::mul(b, h, valid), L::ints(b, {0})}, {{"keepdims", ir::AttrValue(int64_t(0))}});
  pooled = L::div(b, pooled, num_valid);                        // B,D
  int pp = L::linear(b, c.w, pooled, kScore + ".prompt_proj");  // B,Dp
  int ph = L::linear(b, c.w, queries, kScore + ".hs_proj");     // B,Q,Dp
  const int64_t dp = b.shape(pp).back();
  int scores = b.op1("MatMul", {ph, L::unsqueeze(b, pp, {2})});  // B,Q,1
  scores = L::mul_scalar(b, scores, float(1.0 / std::sqrt(double(dp))));
  return L::clip(b, scores, -12.0f, 12.0f);
}

// UniversalSegmentationHead: prompt cross-attention on the encoder tokens, pixel decoder over the
// FPN levels (level 2 replaced by the encoder tokens), instance / semantic heads, mask dot product.
std::pair<int, int> segmentation_head(Ctx& c, const std::vector<int>& fpn, int memory, int prompt, int prompt_mask,
                                      int queries) {
  auto& b = c.b;
  ir::Scope s(b, "segmentation_head");
  const int64_t D = c.cfg.d_model;
  L::MhaOptions mo;
  mo.heads = c.cfg.attn_heads;
  mo.seq_first = true;
  mo.key_padding_mask = prompt_mask;
  int t2 = L::layer_norm(b, c.w, memory, kSeg + ".cross_attn_norm");
  int enc = L::add(b, L::multihead_attention(b, c.w, kSeg + ".cross_attend_prompt", t2, prompt, prompt, mo), memory);
  const Shape s2 = b.shape(fpn.back());
  int prev = L::reshape(b, L::transpose(b, enc, {1, 2, 0}), {c.B, D, s2[2], s2[3]});
  int stage = 0;
  for (int lvl = int(fpn.size()) - 2; lvl >= 0; --lvl, ++stage) {
    const Shape sl = b.shape(fpn[size_t(lvl)]);
    prev = L::add(b, fpn[size_t(lvl)], L::resize_nearest(b, prev, sl[2], sl[3]));
    prev = L::conv2d(b, c.w, prev, kSeg + ".pixel_decoder.conv_layers." + std::to_string(stage), 1, 1);
    prev = L::relu(
        b, L::group_norm(b, c.w, prev, kSeg + ".pixel_decoder.norms." + std::to_string(stage), kPixelDecoderGroups));
  }
  const Shape sp = b.shape(prev);
  int inst = L::conv2d(b, c.w, prev, kSeg + ".instance_seg_head");
  int emb = L::mlp(b, c.w, queries, kSeg + ".mask_predictor.mask_embed", 3);  // B,Q,D
  int masks = b.op1("MatMul", {emb, L::reshape(b, inst, {c.B, D, sp[2] * sp[3]})});
  const int64_t Q = b.shape(queries)[1];
  masks = L::reshape(b, masks, {c.B, Q, sp[2], sp[3]});
  int sem = L::conv2d(b, c.w, prev, kSeg + ".semantic_seg_head");
  return {masks, sem};
}

}  // namespace

ir::Graph build_detector(const ModelConfig& cfg, const Weights& w, const DetectorOptions& opt) {
  SEGMUX_CHECK(opt.batch >= 1 && opt.num_texts >= 1, "detector batch and num_texts must be >= 1");
  SEGMUX_CHECK(cfg.d_model % cfg.attn_heads == 0, "d_model ", cfg.d_model, " not divisible by attn_heads ",
               cfg.attn_heads);
  ir::Graph g;
  g.name = "detector";
  ir::GraphBuilder b(g);
  Ctx c{b, w, cfg, opt.batch};
  const int64_t B = opt.batch, D = cfg.d_model, G = cfg.token_grid(), T = cfg.text_context_length;

  const std::vector<int> sizes = cfg.neck_levels();
  SEGMUX_CHECK(sizes.size() >= 1 && sizes.back() == G, "the detector needs the neck's last level at the token grid ",
               G);
  std::vector<int> fpn;
  for (size_t lvl = 0; lvl < sizes.size(); ++lvl) {
    const int64_t n = sizes[lvl];
    fpn.push_back(b.input(names::detector::fpn(lvl), DType::f32, {B, D, n, n}));
  }
  int pos2 = b.input(names::detector::kPos2, DType::f32, {B, D, G, G});
  int lang = b.input(names::detector::kLanguageFeatures, DType::f32, {T, opt.num_texts, D});
  int lang_mask = b.input(names::detector::kLanguageMask, DType::boolean, {opt.num_texts, T});
  int text_ids = b.input(names::detector::kTextIds, DType::i64, {B});
  const int64_t N = cfg.detector_max_boxes;
  int box_in = b.input(names::detector::kBoxes, DType::f32, {B, N, 4});
  int box_labels = b.input(names::detector::kBoxLabels, DType::i64, {B, N});
  int box_padding = b.input(names::detector::kBoxPadding, DType::boolean, {B, N});

  // Sam3Image._encode_prompt: text of each batch entry, image tokens of level 2 (seq-first).
  int txt = L::gather(b, lang, text_ids, 1);            // T,B,D
  int txt_mask = L::gather(b, lang_mask, text_ids, 0);  // B,T
  int img = L::transpose(b, L::reshape(b, fpn.back(), {B, D, G * G}), {2, 0, 1});
  int img_pos = L::transpose(b, L::reshape(b, pos2, {B, D, G * G}), {2, 0, 1});

  GeometryEncoderOut geo = geometry_encoder(c, img, img_pos, box_in, box_labels, box_padding);
  int prompt = L::concat(b, {txt, geo.tokens}, 0);             // S,B,D
  int prompt_mask = L::concat(b, {txt_mask, geo.padding}, 1);  // B,S

  int memory = fusion_encoder(c, img, img_pos, prompt, prompt_mask);
  DecoderOut dec = decoder(c, memory, img_pos, prompt, prompt_mask, G, G);

  int queries = L::transpose(b, dec.hs, {1, 0, 2});  // B,Q,D
  int cls = dot_product_scoring(c, queries, prompt, prompt_mask);
  int presence = L::transpose(b, dec.presence, {1, 0});  // B,1
  // supervise_joint_box_scores: inverse_sigmoid(sigmoid(cls) * sigmoid(presence)), clamped to +-10.
  int joint = L::mul(b, L::sigmoid(b, cls), L::unsqueeze(b, L::sigmoid(b, presence), {2}));
  int logits = L::clip(b, L::inverse_sigmoid(b, joint), -10.0f, 10.0f);
  int boxes = L::transpose(b, dec.boxes, {1, 0, 2});  // B,Q,4
  auto [masks, sem] = segmentation_head(c, fpn, memory, prompt, prompt_mask, queries);

  b.output(logits, names::detector::kPredLogits);
  b.output(boxes, names::detector::kPredBoxes);
  b.output(cxcywh_to_xyxy(b, boxes), names::detector::kPredBoxesXyxy);
  b.output(masks, names::detector::kPredMasks);
  b.output(presence, names::detector::kPresenceLogit);
  b.output(queries, names::detector::kQueries);
  b.output(sem, names::detector::kSemanticSeg);
  if (opt.debug_outputs) {
    b.output(L::identity(b, geo.tokens), "dbg_geometry");
    b.output(L::identity(b, geo.box_tokens), "dbg_geometry_box_tokens");
    b.output(L::identity(b, geo.pooled), "dbg_geometry_roi_align");
    b.output(L::identity(b, geo.pos_enc), "dbg_geometry_box_pos_enc");
    b.output(L::identity(b, prompt), "dbg_prompt");
    b.output(L::identity(b, memory), "dbg_memory");
    b.output(L::concat(b, dec.layer_presence, 0), "dbg_presence_layers");
    b.output(L::identity(b, cls), "dbg_class_logits");
    std::vector<int> hs, refs;
    for (int h : dec.layer_hs) hs.push_back(L::unsqueeze(b, h, {0}));
    for (int r : dec.layer_refs) refs.push_back(L::unsqueeze(b, r, {0}));
    b.output(L::concat(b, hs, 0), "dbg_hs");
    b.output(L::concat(b, refs, 0), "dbg_refs");
  }
  g.metadata["candidate"] = "detector";
  return g;
}

ir::Graph build_detector_default(const ModelConfig& cfg, const Weights& w) { return build_detector(cfg, w); }

contract::Description detector_contract(const ModelConfig& cfg) {
  namespace n = names::detector;
  const int64_t N = cfg.detector_max_boxes;
  contract::Description d;
  d.summary = "SAM 3.1 grounding (Sam3Image.forward_grounding) for a text prompt and up to " + std::to_string(N) +
              " box exemplars: geometry encoder (boxes: label embedding, direct projection, RoIAlign " +
              std::to_string(cfg.geo_roi_size) + "x" + std::to_string(cfg.geo_roi_size) +
              " pooling, sine box encoding; CLS token; " + std::to_string(cfg.geo_layers) +
              " layers), fusion encoder (" + std::to_string(cfg.fusion_enc_layers) + " layers), DETR decoder (" +
              std::to_string(cfg.dec_layers) + " layers, " + std::to_string(cfg.num_queries) +
              " queries, presence token, boxRPB log), dot-product scoring with the joint presence "
              "logit, segmentation head. Batch B = " +
              std::to_string(DetectorOptions{}.batch) + " frame(s), each grounding one prompt of the text batch.";
  const std::vector<int> sizes = cfg.neck_levels();
  for (size_t lvl = 0; lvl < sizes.size(); ++lvl)
    d.inputs[n::fpn(int(lvl))] = {"detector-head neck level " + std::to_string(lvl),
                                  "backbone det_fpn" + std::to_string(lvl)};
  d.inputs[n::kPos2] = {"sine position encoding of level 2", "backbone pos2"};
  d.inputs[n::kLanguageFeatures] = {"the encoded text batch (seq-first)", "text_encoder language_features"};
  d.inputs[n::kLanguageMask] = {"True = padding", "text_encoder language_mask"};
  d.inputs[n::kTextIds] = {"which prompt of the text batch each batch entry grounds (0 = the text prompt)", "pipeline"};
  d.inputs[n::kBoxes] = {"box exemplars, normalised cxcywh (x, y over the frame's width, height)",
                         "pipeline (request boxes)"};
  d.inputs[n::kBoxLabels] = {"1 = positive exemplar, 0 = negative", "pipeline"};
  d.inputs[n::kBoxPadding] = {"True = empty slot (all True = text only)", "pipeline"};
  d.outputs[n::kPredLogits] = {"final joint logits inverse_sigmoid(sigmoid(cls) * sigmoid(presence)), clamped to +-10",
                               "pipeline detection scores (sigmoid)"};
  d.outputs[n::kPredBoxes] = {"final boxes, normalised cxcywh", "pipeline"};
  d.outputs[n::kPredBoxesXyxy] = {"final boxes, normalised xyxy", "pipeline NMS / association"};
  d.outputs[n::kPredMasks] = {"instance mask logits at 4x the token grid", "pipeline"};
  d.outputs[n::kPresenceLogit] = {"final presence logit", "pipeline"};
  d.outputs[n::kQueries] = {"final (normed) query states", "debug / parity"};
  d.outputs[n::kSemanticSeg] = {"semantic logits (unused downstream)", "none"};
  d.notes = {
      "Box exemplars are the geometry prompt of the official detector (points are the tracker's). Empty slots "
      "are masked everywhere the prompt is used, so a run with every slot empty is the text-only grounding "
      "(geometry = the CLS token). The official video path grounds a box-only prompt with the literal text "
      "'<text placeholder>' (text_ids stays 0); the caller encodes that text.",
      "The decoder runs in eval mode: no DAC query doubling; the presence-logit clamp of the official "
      "code is a no-op and is not applied."};
  return d;
}

}  // namespace segmux::sam31
