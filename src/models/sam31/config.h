// SAM 3.1 model configuration. Defaults are the full-size official sam3.1_multiplex values; every
// field can be overridden from a config file (model.json; fixtures are read by verify/sam31/fixture_config.h).
// Sizes are never hard-coded elsewhere: derive them from here.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace segmux::sam31 {

struct ModelConfig {
  std::string name = "sam3.1_multiplex";
  int image_size = 1008;
  int patch_size = 14;
  int pretrain_img_size = 336;
  int vit_dim = 1024;
  int vit_depth = 32;
  int vit_heads = 16;
  int vit_window = 24;
  std::vector<int> vit_global = {7, 15, 23, 31};
  double vit_mlp_ratio = 4.625;
  int text_width = 1024;
  int text_layers = 24;
  int text_heads = 16;
  int text_context_length = 32;
  int vocab_size = 49408;
  int d_model = 256;
  int ffn_dim = 2048;
  int fusion_enc_layers = 6;
  int dec_layers = 6;
  int geo_layers = 3;
  int num_queries = 200;
  int attn_heads = 8;
  int mem_attn_layers = 4;
  int maskmem_starting_out_chan = 4;
  int iou_head_hidden_dim = 256;
  int twoway_mlp_dim = 2048;
  int multiplex_count = 16;
  int max_num_objects = 16;
  int num_maskmem = 7;
  int max_obj_ptrs_in_encoder = 16;
  int max_cond_frames_in_attn = 4;  // conditioning frames the memory attention may use

  // Point / box prompts of the tracker (official interactive SAM head settings).
  int max_prompt_points = 16;    // point slots of the point_decoder graph (clicks + box corners)
  int multimask_min_pt_num = 0;  // multimask output when min <= clicks <= max (_use_multimask)
  int multimask_max_pt_num = 1;
  double multimask_stability_delta = 0.05;   // dynamic_multimask_stability_delta
  double multimask_stability_thresh = 0.98;  // dynamic_multimask_stability_thresh

  // Sizes that are fixed constants in the official builder (not reduced in the fixtures) but that
  // the state dict and the candidates depend on. Kept here so nothing hard-codes them.
  double rope_theta = 10000.0;        // ViT 2-D axial RoPE and the tracker's RoPE attention
  int text_output_dim = 512;          // text_projection [text_width, 512] (output unused)
  int text_mlp_ratio = 4;             // text resblock MLP = 4 * text_width
  int twoway_depth = 2;               // SAM two-way transformer layers (both mask decoders)
  int twoway_attn_downsample = 2;     // two-way cross attention: internal dim = d_model / 2
  int num_multimask_outputs = 3;      // SAM multimask outputs
  int mask_in_chans = 16;             // interactive prompt encoder mask_downscaling channels
  int memory_fuser_layers = 2;        // CXBlock layers in the memory encoder's fuser
  int memory_fuser_kernel = 7;        // CXBlock depth-wise conv kernel
  int memory_fuser_mlp_ratio = 4;     // CXBlock pwconv1 = 4 * mem_dim
  int maskmem_downsample_stages = 4;  // stride-2 conv stages of SimpleMaskDownSampler
  int maskmem_downsample_kernel = 3;
  int interactive_mask_downsample_kernel = 4;  // tracker.interactive_mask_downsample conv
  int geo_roi_size = 7;                        // geometry encoder box ROI-align pooling size
  int detector_max_boxes = 8;                  // ours: box exemplars one detector run takes (fixed input, padding mask)
  int pixel_decoder_stages = 3;                // segmentation head upsampling stages
  int obj_ptr_proj_layers = 3;                 // tracker obj_ptr_proj MLP depth
  int mlp_head_layers = 3;                     // bbox/presence/mask-embed/iou/obj-score MLP depth
  std::vector<double> neck_scale_factors = {4.0, 2.0, 1.0};  // TriHead ViTDet neck levels

  // Derived sizes.
  int token_grid() const { return image_size / patch_size; }                         // 72
  int pos_embed_pretrain_grid() const { return pretrain_img_size / patch_size; }     // 24
  int pos_embed_tiling() const { return token_grid() / pos_embed_pretrain_grid(); }  // 3
  int vit_mlp_hidden() const { return int(vit_dim * vit_mlp_ratio); }                // 4736
  int vit_head_dim() const { return vit_dim / vit_heads; }                           // 64
  int low_res_mask_size() const { return token_grid() * 4; }                         // 288
  int input_mask_size() const { return low_res_mask_size() * 4; }                    // 1152
  int mem_dim() const { return d_model; }  // the multiplex tracker keeps memories at d_model
  int memory_tokens_per_frame() const { return token_grid() * token_grid(); }  // 5184
  int detector_head_dim() const { return d_model / attn_heads; }               // 32
  bool vit_block_is_global(int block) const;
  // Neck level sizes (square), one per neck_scale_factors entry: {288, 144, 72}.
  std::vector<int> neck_levels() const;
  // Channels after each transposed conv of the neck's scale-4 / scale-2 branches: {vit_dim/2, vit_dim/4}.
  int neck_upsample_channels(int step) const { return vit_dim >> (step + 1); }
  // SAM mask-decoder high-res feature channels {d_model/8, d_model/4} (conv_s0, conv_s1).
  std::array<int, 2> tracker_high_res_channels() const { return {d_model / 8, d_model / 4}; }
  // SimpleMaskDownSampler channels: input (2 * multiplex_count) then one per stride-2 stage.
  std::vector<int> maskmem_downsampler_channels() const;
};

// Full-size official configuration.
ModelConfig default_config();
// Reads a config file: our flat JSON ({"image_size": 1008, ...}, any subset of fields; model.json's
// "config"). Unknown keys are errors naming the key; a golden fixture's config.json is refused with
// the command that converts it (fixtures are read by verify/sam31/fixture_config.h).
ModelConfig load_config(const std::string& path);
// Same, from JSON text (`what` names the source in error messages).
ModelConfig parse_config(const std::string& json_text, const std::string& what);
// Our flat JSON form of every field (load_config reads it back to an equal config).
std::string config_to_json(const ModelConfig& cfg);
// Throws segmux::Error naming every inconsistent size (e.g. vit_dim not divisible by vit_heads).
void validate_config(const ModelConfig& cfg);

}  // namespace segmux::sam31
