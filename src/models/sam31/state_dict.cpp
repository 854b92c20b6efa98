#include "models/sam31/state_dict.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "io/pytorch_zip.h"

namespace segmux::sam31 {

Shape ExpectedTensor::weights_shape() const {
  Shape s = shape;
  if (complex) s.push_back(2);
  return s;
}

namespace {

// Builds the table with the module vocabulary of the official code (nn.Linear, LayerNorm, ...), so each
// section below reads like the module it describes.
class Table {
 public:
  std::vector<ExpectedTensor> entries;

  void add(const std::string& key, Shape shape, bool complex = false) {
    entries.push_back(ExpectedTensor{key, std::move(shape), complex});
  }
  void linear(const std::string& p, int64_t out, int64_t in, bool bias = true) {
    add(p + ".weight", {out, in});
    if (bias) add(p + ".bias", {out});
  }
  void norm(const std::string& p, int64_t dim) {
    add(p + ".weight", {dim});
    add(p + ".bias", {dim});
  }
  void conv(const std::string& p, int64_t out, int64_t in, int64_t k, bool bias = true) {
    add(p + ".weight", {out, in, k, k});
    if (bias) add(p + ".bias", {out});
  }
  void conv_transpose(const std::string& p, int64_t in, int64_t out, int64_t k) {
    add(p + ".weight", {in, out, k, k});
    add(p + ".bias", {out});
  }
  // sam3 MLP: `layers` linears in -> hidden -> ... -> out, named <p>.layers.<i>.
  void mlp(const std::string& p, int64_t in, int64_t hidden, int64_t out, int layers) {
    for (int i = 0; i < layers; ++i)
      linear(p + ".layers." + std::to_string(i), i == layers - 1 ? out : hidden, i == 0 ? in : hidden);
  }
  // nn.MultiheadAttention with packed in-projection.
  void mha(const std::string& p, int64_t d) {
    add(p + ".in_proj_weight", {3 * d, d});
    add(p + ".in_proj_bias", {3 * d});
    linear(p + ".out_proj", d, d);
  }
  // SAM Attention with separate projections to an internal dim.
  void sam_attention(const std::string& p, int64_t d, int64_t internal) {
    linear(p + ".q_proj", internal, d);
    linear(p + ".k_proj", internal, d);
    linear(p + ".v_proj", internal, d);
    linear(p + ".out_proj", d, internal);
  }
};

std::string idx(const std::string& prefix, int i) { return prefix + "." + std::to_string(i); }

// The SAM mask decoder's two-way transformer (both tracker decoders).
void two_way_transformer(Table& t, const std::string& p, const ModelConfig& c) {
  const int64_t d = c.d_model, cross = c.d_model / c.twoway_attn_downsample;
  for (int i = 0; i < c.twoway_depth; ++i) {
    const std::string l = idx(p + ".layers", i);
    t.sam_attention(l + ".self_attn", d, d);
    t.norm(l + ".norm1", d);
    t.sam_attention(l + ".cross_attn_token_to_image", d, cross);
    t.norm(l + ".norm2", d);
    t.linear(l + ".mlp.lin1", c.twoway_mlp_dim, d);
    t.linear(l + ".mlp.lin2", d, c.twoway_mlp_dim);
    t.norm(l + ".norm3", d);
    t.norm(l + ".norm4", d);
    t.sam_attention(l + ".cross_attn_image_to_token", d, cross);
  }
  t.sam_attention(p + ".final_attn_token_to_image", d, cross);
  t.norm(p + ".norm_final_attn", d);
}

// Upscaling, high-res convs and the per-token heads shared by both mask decoders.
void mask_decoder_heads(Table& t, const std::string& p, const ModelConfig& c, int num_mask_tokens) {
  const int64_t d = c.d_model;
  const auto hr = c.tracker_high_res_channels();  // {d/8, d/4}
  t.conv_transpose(p + ".output_upscaling.0", d, hr[1], 2);
  t.norm(p + ".output_upscaling.1", hr[1]);
  t.conv_transpose(p + ".output_upscaling.3", hr[1], hr[0], 2);
  t.conv(p + ".conv_s0", hr[0], d, 1);
  t.conv(p + ".conv_s1", hr[1], d, 1);
  for (int i = 0; i < num_mask_tokens; ++i)
    t.mlp(idx(p + ".output_hypernetworks_mlps", i), d, d, hr[0], c.mlp_head_layers);
  t.mlp(p + ".iou_prediction_head", d, c.iou_head_hidden_dim, num_mask_tokens, c.mlp_head_layers);
  t.mlp(p + ".pred_obj_score_head", d, d, 1, c.mlp_head_layers);
}

void tracker(Table& t, const ModelConfig& c) {
  const std::string p = "tracker.model.";
  const int64_t d = c.d_model, mem = c.mem_dim(), mc = c.multiplex_count;
  t.add(p + "maskmem_tpos_enc", {c.num_maskmem, 1, 1, mem});
  t.add(p + "interactivity_no_mem_embed", {1, 1, d});
  t.add(p + "no_obj_embed_spatial", {mc, mem});
  t.add(p + "output_valid_embed", {mc, d});
  t.add(p + "output_invalid_embed", {mc, d});
  t.conv(p + "interactive_mask_downsample", 1, 1, c.interactive_mask_downsample_kernel);

  // Memory attention: decoupled RoPE self/cross attention layers.
  for (int i = 0; i < c.mem_attn_layers; ++i) {
    const std::string l = idx(p + "transformer.encoder.layers", i);
    for (const char* a : {"self_attn", "cross_attn"}) {
      const bool cross = std::string(a) == "cross_attn";
      t.linear(l + "." + a + "_q_proj", d, d);
      t.linear(l + "." + a + "_k_proj", d, cross ? mem : d);
      t.linear(l + "." + a + "_v_proj", d, cross ? mem : d);
      t.linear(l + "." + a + "_out_proj", d, d);
    }
    t.linear(l + ".image_cross_attn_q_proj", d, d);
    t.linear(l + ".image_cross_attn_k_proj", d, d);
    t.linear(l + ".linear1", c.ffn_dim, d);
    t.linear(l + ".linear2", d, c.ffn_dim);
    t.norm(l + ".norm1", d);
    t.norm(l + ".norm2", d);
    t.norm(l + ".norm3", d);
  }
  t.norm(p + "transformer.encoder.norm", d);

  // Memory encoder: SimpleMaskDownSampler (conv, LayerNorm2d, GELU per stage, then a 1x1 conv),
  // pix_feat_proj, CXBlock fuser.
  const auto ch = c.maskmem_downsampler_channels();
  const std::string ds = p + "maskmem_backbone.mask_downsampler.encoder";
  for (int s = 0; s < c.maskmem_downsample_stages; ++s) {
    t.conv(idx(ds, 3 * s), ch[s + 1], ch[s], c.maskmem_downsample_kernel);
    t.norm(idx(ds, 3 * s + 1), ch[s + 1]);
  }
  t.conv(idx(ds, 3 * c.maskmem_downsample_stages), mem, ch.back(), 1);
  t.conv(p + "maskmem_backbone.pix_feat_proj", mem, d, 1);
  for (int i = 0; i < c.memory_fuser_layers; ++i) {
    const std::string l = idx(p + "maskmem_backbone.fuser.layers", i);
    t.add(l + ".gamma", {mem});
    t.add(l + ".dwconv.weight", {mem, 1, c.memory_fuser_kernel, c.memory_fuser_kernel});
    t.add(l + ".dwconv.bias", {mem});
    t.norm(l + ".norm", mem);
    t.linear(l + ".pwconv1", c.memory_fuser_mlp_ratio * mem, mem);
    t.linear(l + ".pwconv2", mem, c.memory_fuser_mlp_ratio * mem);
  }
  t.linear(p + "no_obj_ptr_linear", d, d);
  t.add(p + "image_pe_layer.positional_encoding_gaussian_matrix", {2, d / 2});

  // Interactive (SAM) prompt encoder: random-Fourier PE, 4 point embeddings (positive, negative,
  // two box corners), the mask-downscaling convs.
  const std::string pe = p + "interactive_sam_prompt_encoder";
  t.add(pe + ".pe_layer.positional_encoding_gaussian_matrix", {2, d / 2});
  for (int i = 0; i < 4; ++i) t.add(idx(pe + ".point_embeddings", i) + ".weight", {1, d});
  t.add(pe + ".not_a_point_embed.weight", {1, d});
  const int64_t m4 = c.mask_in_chans / 4;
  t.conv(pe + ".mask_downscaling.0", m4, 1, 2);
  t.norm(pe + ".mask_downscaling.1", m4);
  t.conv(pe + ".mask_downscaling.3", c.mask_in_chans, m4, 2);
  t.norm(pe + ".mask_downscaling.4", c.mask_in_chans);
  t.conv(pe + ".mask_downscaling.6", d, c.mask_in_chans, 1);
  t.add(pe + ".no_mask_embed.weight", {1, d});

  // Interactive SAM mask decoder: one iou/obj-score token, multimask + 1 mask tokens.
  const std::string imd = p + "interactive_sam_mask_decoder";
  const int interactive_tokens = c.num_multimask_outputs + 1;
  two_way_transformer(t, imd + ".transformer", c);
  t.add(imd + ".iou_token.weight", {1, d});
  t.add(imd + ".mask_tokens.weight", {interactive_tokens, d});
  t.add(imd + ".obj_score_token.weight", {1, d});
  mask_decoder_heads(t, imd, c, interactive_tokens);

  // Multiplex mask decoder: per-slot tokens, multimask outputs only.
  const std::string md = p + "sam_mask_decoder";
  two_way_transformer(t, md + ".transformer", c);
  t.add(md + ".iou_token.weight", {mc, d});
  t.add(md + ".obj_score_token.weight", {mc, d});
  t.add(md + ".mask_tokens.weight", {mc * c.num_multimask_outputs, d});
  mask_decoder_heads(t, md, c, c.num_multimask_outputs);

  t.mlp(p + "obj_ptr_proj", d, d, d, c.obj_ptr_proj_layers);
  t.mlp(p + "interactive_obj_ptr_proj", d, d, d, c.obj_ptr_proj_layers);
  t.linear(p + "obj_ptr_tpos_proj", mem, d);
}

// One TriHead neck head: per scale factor, transposed convs up (4x: two, 2x: one), then 1x1 and 3x3.
void neck_head(Table& t, const std::string& p, const ModelConfig& c) {
  const int64_t v = c.vit_dim, d = c.d_model;
  for (size_t i = 0; i < c.neck_scale_factors.size(); ++i) {
    const std::string l = idx(p, int(i));
    const double s = c.neck_scale_factors[i];
    int64_t in = v;
    if (s == 4.0) {
      t.conv_transpose(l + ".dconv_2x2_0", v, c.neck_upsample_channels(0), 2);
      t.conv_transpose(l + ".dconv_2x2_1", c.neck_upsample_channels(0), c.neck_upsample_channels(1), 2);
      in = c.neck_upsample_channels(1);
    } else if (s == 2.0) {
      t.conv_transpose(l + ".dconv_2x2", v, c.neck_upsample_channels(0), 2);
      in = c.neck_upsample_channels(0);
    }  // 1.0: identity; 0.5: max-pool (no parameters)
    t.conv(l + ".conv_1x1", d, in, 1);
    t.conv(l + ".conv_3x3", d, d, 3);
  }
}

void vision_backbone(Table& t, const ModelConfig& c) {
  const std::string p = "detector.backbone.vision_backbone.";
  const int64_t v = c.vit_dim;
  const int64_t pg = c.pos_embed_pretrain_grid();
  t.add(p + "trunk.pos_embed", {1, pg * pg + 1, v});  // + the pretraining cls token
  t.add(p + "trunk.patch_embed.proj.weight", {v, 3, c.patch_size, c.patch_size});
  for (int i = 0; i < c.vit_depth; ++i) {
    const std::string b = idx(p + "trunk.blocks", i);
    const int64_t grid = c.vit_block_is_global(i) ? c.token_grid() : c.vit_window;
    t.norm(b + ".norm1", v);
    t.add(b + ".attn.freqs_cis", {grid * grid, c.vit_head_dim() / 2}, true);
    t.linear(b + ".attn.qkv", 3 * v, v);
    t.linear(b + ".attn.proj", v, v);
    t.norm(b + ".norm2", v);
    t.linear(b + ".mlp.fc1", c.vit_mlp_hidden(), v);
    t.linear(b + ".mlp.fc2", v, c.vit_mlp_hidden());
  }
  t.norm(p + "trunk.ln_pre", v);
  neck_head(t, p + "convs", c);
  neck_head(t, p + "interactive_convs", c);
  neck_head(t, p + "propagation_convs", c);
}

void language_backbone(Table& t, const ModelConfig& c) {
  const std::string p = "detector.backbone.language_backbone.";
  const int64_t w = c.text_width;
  t.add(p + "encoder.positional_embedding", {c.text_context_length, w});
  t.add(p + "encoder.text_projection", {w, c.text_output_dim});
  t.add(p + "encoder.token_embedding.weight", {c.vocab_size, w});
  for (int i = 0; i < c.text_layers; ++i) {
    const std::string b = idx(p + "encoder.transformer.resblocks", i);
    t.mha(b + ".attn", w);
    t.norm(b + ".ln_1", w);
    t.norm(b + ".ln_2", w);
    t.linear(b + ".mlp.c_fc", c.text_mlp_ratio * w, w);
    t.linear(b + ".mlp.c_proj", w, c.text_mlp_ratio * w);
  }
  t.norm(p + "encoder.ln_final", w);
  t.linear(p + "resizer", c.d_model, w);
}

// Encoder layer of the geometry encoder and the fusion encoder: self attention, image cross attention, FFN.
void encoder_layer(Table& t, const std::string& l, const ModelConfig& c) {
  const int64_t d = c.d_model;
  t.mha(l + ".self_attn", d);
  t.mha(l + ".cross_attn_image", d);
  t.linear(l + ".linear1", c.ffn_dim, d);
  t.linear(l + ".linear2", d, c.ffn_dim);
  t.norm(l + ".norm1", d);
  t.norm(l + ".norm2", d);
  t.norm(l + ".norm3", d);
}

void detector_heads(Table& t, const ModelConfig& c) {
  const int64_t d = c.d_model;
  const std::string g = "detector.geometry_encoder.";
  t.add(g + "label_embed.weight", {2, d});
  t.add(g + "cls_embed.weight", {1, d});
  t.linear(g + "points_direct_project", d, 2);
  t.linear(g + "points_pool_project", d, d);
  t.linear(g + "points_pos_enc_project", d, d);
  t.linear(g + "boxes_direct_project", d, 4);
  t.conv(g + "boxes_pool_project", d, d, c.geo_roi_size);
  t.linear(g + "boxes_pos_enc_project", d, d + 2);
  t.linear(g + "final_proj", d, d);
  t.norm(g + "norm", d);
  t.norm(g + "img_pre_norm", d);
  for (int i = 0; i < c.geo_layers; ++i) encoder_layer(t, idx(g + "encode", i), c);
  t.norm(g + "encode_norm", d);

  for (int i = 0; i < c.fusion_enc_layers; ++i) encoder_layer(t, idx("detector.transformer.encoder.layers", i), c);

  const std::string dec = "detector.transformer.decoder.";
  for (int i = 0; i < c.dec_layers; ++i) {
    const std::string l = idx(dec + "layers", i);
    t.mha(l + ".cross_attn", d);
    t.norm(l + ".norm1", d);
    t.mha(l + ".ca_text", d);
    t.norm(l + ".catext_norm", d);
    t.mha(l + ".self_attn", d);
    t.norm(l + ".norm2", d);
    t.linear(l + ".linear1", c.ffn_dim, d);
    t.linear(l + ".linear2", d, c.ffn_dim);
    t.norm(l + ".norm3", d);
  }
  t.norm(dec + "norm", d);
  t.mlp(dec + "bbox_embed", d, d, 4, c.mlp_head_layers);
  t.add(dec + "query_embed.weight", {c.num_queries, d});
  t.add(dec + "reference_points.weight", {c.num_queries, 4});
  t.mlp(dec + "boxRPB_embed_x", 2, d, c.attn_heads, 2);
  t.mlp(dec + "boxRPB_embed_y", 2, d, c.attn_heads, 2);
  t.add(dec + "presence_token.weight", {1, d});
  t.mlp(dec + "presence_token_head", d, d, 1, c.mlp_head_layers);
  t.norm(dec + "presence_token_out_norm", d);
  t.mlp(dec + "ref_point_head", 2 * d, d, d, 2);

  const std::string s = "detector.segmentation_head.";
  for (int i = 0; i < c.pixel_decoder_stages; ++i) t.conv(idx(s + "pixel_decoder.conv_layers", i), d, d, 3);
  for (int i = 0; i < c.pixel_decoder_stages; ++i) t.norm(idx(s + "pixel_decoder.norms", i), d);
  t.mlp(s + "mask_predictor.mask_embed", d, d, d, c.mlp_head_layers);
  t.mha(s + "cross_attend_prompt", d);
  t.norm(s + "cross_attn_norm", d);
  t.conv(s + "semantic_seg_head", 1, d, 1);
  t.conv(s + "instance_seg_head", d, d, 1);

  const std::string dp = "detector.dot_prod_scoring.";
  t.mlp(dp + "prompt_mlp", d, c.ffn_dim, d, 2);
  t.norm(dp + "prompt_mlp.out_norm", d);
  t.linear(dp + "prompt_proj", d, d);
  t.linear(dp + "hs_proj", d, d);
}

std::string describe_tensor(const Tensor& t) { return std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()); }

}  // namespace

std::vector<ExpectedTensor> expected_state_dict(const ModelConfig& cfg) {
  validate_config(cfg);
  Table t;
  tracker(t, cfg);
  vision_backbone(t, cfg);
  language_backbone(t, cfg);
  detector_heads(t, cfg);
  return std::move(t.entries);
}

std::string WeightsProblems::message(size_t max_listed) const {
  std::ostringstream os;
  os << "weights do not match the config: " << missing.size() << " missing, " << unexpected.size() << " unexpected, "
     << mis_shaped.size() << " mis-shaped";
  auto list = [&](const char* title, const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    os << "\n" << title << ":";
    for (size_t i = 0; i < keys.size() && i < max_listed; ++i) os << "\n  " << keys[i];
    if (keys.size() > max_listed) os << "\n  ... and " << keys.size() - max_listed << " more";
  };
  list("missing", missing);
  list("unexpected", unexpected);
  list("mis-shaped", mis_shaped);
  return os.str();
}

WeightsProblems compare_weights(const Weights& w, const ModelConfig& cfg) {
  WeightsProblems out;
  std::map<std::string, const ExpectedTensor*> expected;
  const auto table = expected_state_dict(cfg);
  for (auto& e : table) expected[e.key] = &e;
  for (auto& e : table) {
    if (!w.has(e.key)) {
      out.missing.push_back(e.key);
      continue;
    }
    const Tensor& t = w.get(e.key);
    if (t.dtype() != DType::f32 || t.shape() != e.weights_shape())
      out.mis_shaped.push_back(e.key + ": " + describe_tensor(t) + " where f32 " + shape_str(e.weights_shape()) +
                               (e.complex ? " (complex64 " + shape_str(e.shape) + ")" : "") + " expected");
  }
  for (auto& k : w.keys())
    if (!expected.count(k)) out.unexpected.push_back(k + " (" + describe_tensor(w.get(k)) + ")");
  return out;
}

void check_weights(const Weights& w, const ModelConfig& cfg) {
  WeightsProblems p = compare_weights(w, cfg);
  if (!p.ok()) fail("config '", cfg.name, "': ", p.message());
}

}  // namespace segmux::sam31
