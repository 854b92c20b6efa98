#include "models/sam31/backbone.h"
#include "models/sam31/tensor_names.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "models/sam31/contract.h"
#include "models/sam31/layers.h"

namespace segmux::sam31 {

namespace L = layers;

namespace {

const std::string kVision = "detector.backbone.vision_backbone";
const std::string kTrunk = kVision + ".trunk";
const char* kHeads[3] = {"convs", "interactive_convs", "propagation_convs"};

bool is_global(const ModelConfig& cfg, int block) {
  return std::find(cfg.vit_global.begin(), cfg.vit_global.end(), block) != cfg.vit_global.end();
}

// Window partition of NHWC x into (B * nW, ws*ws, C) tokens, zero-padding H, W up to multiples of ws
// (vitdet.window_partition). Returns the padded size in *hp, *wp.
int window_partition(ir::GraphBuilder& b, int x, int64_t ws, int64_t* hp, int64_t* wp) {
  const Shape s = b.shape(x);  // B,H,W,C
  const int64_t B = s[0], H = s[1], W = s[2], C = s[3];
  const int64_t ph = (ws - H % ws) % ws, pw = (ws - W % ws) % ws;
  if (ph > 0 || pw > 0)
    x = b.op1("Pad", {x, L::ints(b, {0, 0, 0, 0, 0, ph, pw, 0})}, {{"mode", ir::AttrValue(std::string("constant"))}});
  *hp = H + ph, *wp = W + pw;
  x = L::reshape(b, x, {B, *hp / ws, ws, *wp / ws, ws, C});
  x = L::transpose(b, x, {0, 1, 3, 2, 4, 5});
  return L::reshape(b, x, {B * (*hp / ws) * (*wp / ws), ws * ws, C});
}

int window_unpartition(ir::GraphBuilder& b, int x, int64_t ws, int64_t B, int64_t hp, int64_t wp, int64_t H,
                       int64_t W) {
  const int64_t C = b.shape(x).back();
  x = L::reshape(b, x, {B, hp / ws, wp / ws, ws, ws, C});
  x = L::transpose(b, x, {0, 1, 3, 2, 4, 5});
  x = L::reshape(b, x, {B, hp, wp, C});
  if (hp > H) x = L::slice(b, x, 1, 0, H);
  if (wp > W) x = L::slice(b, x, 2, 0, W);
  return x;
}

// vitdet.Attention on tokens (B', N, C) laid out row-major on an n_side x n_side grid.
int vit_attention(ir::GraphBuilder& b, const Weights& w, const std::string& p, int x, int heads,
                  const L::RopeTables& rope) {
  const Shape s = b.shape(x);  // B', N, C
  const int64_t Bp = s[0], N = s[1], C = s[2], hd = C / heads;
  int qkv = L::linear(b, w, x, p + ".qkv");
  qkv = L::reshape(b, qkv, {Bp, N, 3, heads, hd});
  qkv = L::transpose(b, qkv, {2, 0, 3, 1, 4});  // 3, B', H, N, hd
  auto parts = L::split(b, qkv, 0, {1, 1, 1});
  int q = L::squeeze(b, parts[0], {0});
  int k = L::squeeze(b, parts[1], {0});
  int v = L::squeeze(b, parts[2], {0});
  q = L::apply_rope(b, q, rope, p + ".rope_q");
  k = L::apply_rope(b, k, rope, p + ".rope_k");
  int o = L::sdpa(b, q, k, v);                                      // B', H, N, hd
  o = L::reshape(b, L::transpose(b, o, {0, 2, 1, 3}), {Bp, N, C});  // B', N, C
  return L::linear(b, w, o, p + ".proj");
}

// Mlp with the official bf16 fc1 + GELU (perflib.fused.addmm_act) or fp32.
int vit_mlp(ir::GraphBuilder& b, const Weights& w, const std::string& p, int x, bool fp32) {
  int h;
  if (fp32) {
    h = L::gelu_erf(b, L::linear(b, w, x, p + ".fc1"));
  } else {
    // x, W, b rounded to bf16; the product accumulates in fp32 and is rounded to bf16; GELU runs on
    // the bf16 value and its result is rounded to bf16 again; fc2 promotes it back to fp32.
    const Tensor w1 = w.get(p + ".fc1.weight").cast(DType::bf16).cast(DType::f32);
    const Tensor b1 = w.get(p + ".fc1.bias").cast(DType::bf16).cast(DType::f32);
    h = L::linear_t(b, L::round_to_bf16(b, x), w1, b1, p + ".fc1_bf16");
    h = L::round_to_bf16(b, h);
    h = L::round_to_bf16(b, L::gelu_erf(b, h));
  }
  return L::linear(b, w, h, p + ".fc2");
}

// One SimpleFPN level of a neck head (necks.Sam3TriViTDetNeck).
int neck_level(ir::GraphBuilder& b, const Weights& w, const std::string& p, int x, double scale) {
  if (scale == 4.0) {
    x = L::conv_transpose2d(b, w, x, p + ".dconv_2x2_0", 2);
    x = L::gelu_erf(b, x);
    x = L::conv_transpose2d(b, w, x, p + ".dconv_2x2_1", 2);
  } else if (scale == 2.0) {
    x = L::conv_transpose2d(b, w, x, p + ".dconv_2x2", 2);
  } else if (scale == 0.5) {
    x = b.op1("MaxPool", {x},
              {{"kernel_shape", ir::AttrValue(std::vector<int64_t>{2, 2})},
               {"strides", ir::AttrValue(std::vector<int64_t>{2, 2})}});
  } else {
    SEGMUX_CHECK(scale == 1.0, "neck scale factor ", scale, " is not supported");
  }
  x = L::conv2d(b, w, x, p + ".conv_1x1");
  return L::conv2d(b, w, x, p + ".conv_3x3", 1, 1);
}

int64_t level_size(int64_t g, double scale) { return scale >= 1.0 ? int64_t(g * scale) : g / 2; }

}  // namespace

Tensor vit_abs_pos_embed(const ModelConfig& cfg, const Weights& w) {
  const Tensor pe_in = w.get(kTrunk + ".pos_embed");
  const Tensor pe = as_f32(pe_in);
  const int64_t P = cfg.pos_embed_pretrain_grid(), g = cfg.token_grid(), C = cfg.vit_dim;
  SEGMUX_CHECK(pe.rank() == 3 && pe.dim(2) == C && (pe.dim(1) == P * P || pe.dim(1) == P * P + 1), "pos_embed ",
               shape_str(pe.shape()), " does not match a ", P, "x", P, " grid of width ", C);
  const int64_t skip = pe.dim(1) - P * P;  // the CLS row, when present
  Tensor out(DType::f32, {1, g, g, C});
  const float* src = pe.data<float>() + skip * C;
  float* dst = out.data<float>();
  for (int64_t y = 0; y < g; ++y)
    for (int64_t x = 0; x < g; ++x)
      std::memcpy(dst + (y * g + x) * C, src + ((y % P) * P + (x % P)) * C, size_t(C) * sizeof(float));
  return out;
}

ir::Graph build_backbone(const ModelConfig& cfg, const Weights& w, const BackboneOptions& opt) {
  SEGMUX_CHECK(cfg.image_size % cfg.patch_size == 0, "image_size ", cfg.image_size, " is not a multiple of patch ",
               cfg.patch_size);
  SEGMUX_CHECK(cfg.vit_dim % cfg.vit_heads == 0, "vit_dim ", cfg.vit_dim, " not divisible by vit_heads ",
               cfg.vit_heads);
  SEGMUX_CHECK(!cfg.vit_global.empty(), "the ViT needs at least one global block");
  SEGMUX_CHECK(cfg.neck_scale_factors.size() >= 2, "the neck needs at least two levels (tracker high-res features)");
  ir::Graph g;
  g.name = "backbone";
  ir::GraphBuilder b(g);
  const int64_t S = cfg.image_size, G = cfg.token_grid(), C = cfg.vit_dim, ws = cfg.vit_window;
  const int heads = cfg.vit_heads, hd = cfg.vit_dim / cfg.vit_heads;

  int img = b.input(names::backbone::kImage, DType::f32, {1, 3, S, S});
  int x;
  {
    ir::Scope s(b, "patch_embed");
    x = L::conv2d(b, w, img, kTrunk + ".patch_embed.proj", cfg.patch_size);
    x = L::transpose(b, x, {0, 2, 3, 1});  // NHWC
    x = L::add(b, x, L::const_tensor(b, vit_abs_pos_embed(cfg, w), "abs_pos"));
    x = L::layer_norm(b, w, x, kTrunk + ".ln_pre");
  }

  // RoPE: windowed blocks use the window grid; global blocks the full grid with positions scaled by
  // window/grid (use_interp_rope, rope_pt_size = window).
  const L::RopeTables rope_window = L::axial_rope_tables(hd, int(ws), int(ws), float(cfg.rope_theta), 1.0f);
  const L::RopeTables rope_global =
      L::axial_rope_tables(hd, int(G), int(G), float(cfg.rope_theta), float(ws) / float(G));

  const int last = *std::max_element(cfg.vit_global.begin(), cfg.vit_global.end());
  SEGMUX_CHECK(last < cfg.vit_depth, "global block ", last, " is beyond vit_depth ", cfg.vit_depth);
  for (int i = 0; i <= last; ++i) {
    const std::string p = kTrunk + ".blocks." + std::to_string(i);
    ir::Scope s(b, "blocks." + std::to_string(i));
    int shortcut = x;
    int h = L::layer_norm(b, w, x, p + ".norm1");
    if (is_global(cfg, i)) {
      h = L::reshape(b, h, {1, G * G, C});
      h = vit_attention(b, w, p + ".attn", h, heads, rope_global);
      h = L::reshape(b, h, {1, G, G, C});
    } else {
      int64_t hp = 0, wp = 0;
      h = window_partition(b, h, ws, &hp, &wp);
      h = vit_attention(b, w, p + ".attn", h, heads, rope_window);
      h = window_unpartition(b, h, ws, 1, hp, wp, G, G);
    }
    x = L::add(b, shortcut, h);
    x = L::add(b, x, vit_mlp(b, w, p + ".mlp", L::layer_norm(b, w, x, p + ".norm2"), opt.fp32_mlp));
  }
  int trunk = L::transpose(b, x, {0, 3, 1, 2});  // NCHW
  b.output(trunk, names::backbone::kVitTrunk);

  std::vector<int> prop_levels;
  for (int head = 0; head < 3; ++head) {
    if (head == 1 && !opt.interactive_head) continue;
    ir::Scope s(b, kHeads[head]);
    for (size_t lvl = 0; lvl < cfg.neck_scale_factors.size(); ++lvl) {
      int y = neck_level(b, w, kVision + "." + kHeads[head] + "." + std::to_string(lvl), trunk,
                         cfg.neck_scale_factors[lvl]);
      b.output(y, names::backbone::fpn(names::backbone::Head(head), lvl));
      if (head == 2) prop_levels.push_back(y);
    }
  }
  for (size_t lvl = 0; lvl < cfg.neck_scale_factors.size(); ++lvl) {
    const int64_t n = level_size(G, cfg.neck_scale_factors[lvl]);
    Tensor pe = L::sine_position_encoding(cfg.d_model, int(n), int(n));
    b.output(L::identity(b, L::const_tensor(b, pe, "pos_enc")), names::backbone::pos(lvl));
  }
  if (opt.tracker_high_res && w.has("tracker.model.sam_mask_decoder.conv_s0.weight")) {
    b.output(L::conv2d(b, w, prop_levels[0], "tracker.model.sam_mask_decoder.conv_s0"), names::backbone::kHighResS0);
    b.output(L::conv2d(b, w, prop_levels[1], "tracker.model.sam_mask_decoder.conv_s1"), names::backbone::kHighResS1);
    b.output(L::conv2d(b, w, L::round_to_bf16(b, prop_levels[0]), "tracker.model.sam_mask_decoder.conv_s0"),
             names::backbone::kHighResS0Cached);
    b.output(L::conv2d(b, w, L::round_to_bf16(b, prop_levels[1]), "tracker.model.sam_mask_decoder.conv_s1"),
             names::backbone::kHighResS1Cached);
  }
  g.metadata["candidate"] = "backbone";
  g.metadata["vit_mlp"] = opt.fp32_mlp ? "fp32" : "bf16 (official)";
  return g;
}

ir::Graph build_backbone_default(const ModelConfig& cfg, const Weights& w) { return build_backbone(cfg, w); }

ir::Graph build_backbone_variant(const ModelConfig& cfg, const Weights& w, const std::string& variant) {
  BackboneOptions o;
  if (variant == kBackboneFp32MlpVariant) {
    o.fp32_mlp = true;
  } else {
    SEGMUX_CHECK(variant.empty(), "backbone has no build variant '", variant, "' (known: fp32_mlp)");
  }
  return build_backbone(cfg, w, o);
}

contract::Description backbone_contract(const ModelConfig& cfg) {
  namespace n = names::backbone;
  contract::Description d;
  d.summary = "SAM 3.1 vision backbone: ViT trunk (" + std::to_string(cfg.vit_depth) + " blocks, width " +
              std::to_string(cfg.vit_dim) + ", windows of " + std::to_string(cfg.vit_window) +
              ", global blocks at the config's vit_global, 2-D axial RoPE, official bf16 fc1+GELU) and "
              "the TriHead ViTDet neck (detector / interactive / propagation heads, 3 levels each). "
              "Batch 1 (one frame per run).";
  d.inputs[n::kImage] = {
      "frame resized to image_size x image_size, normalised (x/255 - 0.5) / 0.5 (the official loader "
      "stores it as fp16 first)",
      "pipeline frame loader"};
  d.outputs[n::kVitTrunk] = {"raw ViT output (last global block, NCHW)", "debug / parity"};
  const char* what[3] = {"detector head ('convs')", "interactive head ('interactive_convs')",
                         "propagation head ('propagation_convs')"};
  const char* who[3] = {"detector inputs fpn0..2 (level 2 also feeds the geometry and fusion encoders)",
                        "interactive (point/box) tracker path", "tracker: propagation_decoder / memory_encoder"};
  const int levels = int(cfg.neck_scale_factors.size());
  for (int head = 0; head < 3; ++head)
    for (int lvl = 0; lvl < levels; ++lvl)
      d.outputs[n::fpn(n::Head(head), lvl)] = {std::string(what[head]) + ", level " + std::to_string(lvl) +
                                                   " (stride " + std::to_string(cfg.patch_size) + "/" +
                                                   std::to_string(int(cfg.neck_scale_factors[size_t(lvl)])) + ")",
                                               who[head]};
  for (int lvl = 0; lvl < levels; ++lvl)
    d.outputs[n::pos(lvl)] = {
        "DETR sine position encoding of level " + std::to_string(lvl) + " (same for all heads; a constant)",
        lvl == 2 ? "detector input pos2; tracker" : "tracker"};
  d.outputs[n::kHighResS0] = {"tracker.model.sam_mask_decoder.conv_s0(propagation_fpn0)",
                              "propagation_decoder high-res features 0"};
  d.outputs[n::kHighResS1] = {"tracker.model.sam_mask_decoder.conv_s1(propagation_fpn1)",
                              "propagation_decoder high-res features 1"};
  d.outputs[n::kHighResS0Cached] = {
      "conv_s0(propagation_fpn0 rounded to bf16)",
      "propagation_decoder high-res features 0 in the interactive propagation (official cached bf16 features)"};
  d.outputs[n::kHighResS1Cached] = {"conv_s1(propagation_fpn1 rounded to bf16)",
                                    "propagation_decoder high-res features 1 in the interactive propagation"};
  d.notes = {
      "Build variant `fp32_mlp`: fc1 + GELU in fp32 instead of the official bf16 addmm_act; used only to "
      "check the trunk at fp32 tolerance.",
      "RoPE tables are computed in C++ from the config (real cos/sin), not read from the checkpoint's "
      "complex freqs_cis buffers (tests check they agree)."};
  return d;
}

}  // namespace segmux::sam31
