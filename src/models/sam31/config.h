// SAM 3.1 model configuration. Defaults are the full-size official sam3.1_multiplex values; every
// field can be overridden from a config file (the fixtures' config.json format is read too).
// Sizes are never hard-coded elsewhere: derive them from here.
#pragma once
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

  // Derived sizes.
  int token_grid() const { return image_size / patch_size; }                       // 72
  int pos_embed_pretrain_grid() const { return pretrain_img_size / patch_size; }   // 24
  int vit_mlp_hidden() const { return int(vit_dim * vit_mlp_ratio); }              // 4736
  int low_res_mask_size() const { return token_grid() * 4; }                       // 288
  int input_mask_size() const { return low_res_mask_size() * 4; }                  // 1152
  int mem_dim() const { return d_model; }  // the multiplex tracker keeps memories at d_model
};

// Full-size official configuration.
ModelConfig default_config();
// Reads a config file: either our flat JSON ({"image_size": 1008, ...}, any subset of fields) or the
// fixtures' config.json (its "reduced_vs_official" table, reduced values). Unknown keys are errors.
ModelConfig load_config(const std::string& path);

}  // namespace segmux::sam31
