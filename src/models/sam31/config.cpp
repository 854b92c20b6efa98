#include "models/sam31/config.h"

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/json_limits.h"
#include "io/printable.h"
#include "models/sam31/tokenizer.h"

namespace segmux::sam31 {

using nlohmann::json;

bool ModelConfig::vit_block_is_global(int block) const {
  for (int g : vit_global)
    if (g == block) return true;
  return false;
}

std::vector<int> ModelConfig::neck_levels() const {
  std::vector<int> sizes;
  for (double s : neck_scale_factors) sizes.push_back(int(std::lround(token_grid() * s)));
  return sizes;
}

std::vector<int> ModelConfig::maskmem_downsampler_channels() const {
  // Input: two channels (mask + condition) per multiplexed object; each stride-2 stage multiplies
  // the channel count by 4 starting from maskmem_starting_out_chan.
  std::vector<int> ch = {2 * multiplex_count};
  int c = maskmem_starting_out_chan;
  for (int i = 0; i < maskmem_downsample_stages; ++i) {
    c *= 4;
    ch.push_back(c);
  }
  return ch;
}

ModelConfig default_config() { return ModelConfig{}; }

namespace {

// One entry per config field: how to read it from JSON and how to write it back.
struct FieldIO {
  std::function<void(ModelConfig&, const json&, const std::string& what)> read;
  std::function<json(const ModelConfig&)> write;
};

int read_int(const json& v, const std::string& key, const std::string& what) {
  SEGMUX_CHECK(v.is_number_integer(), what, ": field '", key, "' must be an integer, got ", describe_json(v));
  SEGMUX_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() < (uint64_t(1) << 31), what, ": field '", key,
               "' is out of range: ", v.dump());
  int64_t x = v.get<int64_t>();
  SEGMUX_CHECK(x >= -(int64_t(1) << 31) && x < (int64_t(1) << 31), what, ": field '", key, "' is out of range: ", x);
  return int(x);
}

double read_double(const json& v, const std::string& key, const std::string& what) {
  SEGMUX_CHECK(v.is_number(), what, ": field '", key, "' must be a number, got ", describe_json(v));
  return v.get<double>();
}

const std::map<std::string, FieldIO>& fields() {
  static const std::map<std::string, FieldIO> table = [] {
    std::map<std::string, FieldIO> t;
    auto add_int = [&](const char* name, int ModelConfig::*member) {
      t[name] =
          FieldIO{[=](ModelConfig& c, const json& v, const std::string& what) { c.*member = read_int(v, name, what); },
                  [=](const ModelConfig& c) { return json(c.*member); }};
    };
    auto add_double = [&](const char* name, double ModelConfig::*member) {
      t[name] = FieldIO{
          [=](ModelConfig& c, const json& v, const std::string& what) { c.*member = read_double(v, name, what); },
          [=](const ModelConfig& c) { return json(c.*member); }};
    };
    t["name"] = FieldIO{[](ModelConfig& c, const json& v, const std::string& what) {
                          SEGMUX_CHECK(v.is_string(), what, ": field 'name' must be a string, got ", describe_json(v));
                          c.name = v.get<std::string>();
                        },
                        [](const ModelConfig& c) { return json(c.name); }};
    t["vit_global"] = FieldIO{[](ModelConfig& c, const json& v, const std::string& what) {
                                SEGMUX_CHECK(v.is_array(), what,
                                             ": field 'vit_global' must be a list of integers, got ", describe_json(v));
                                c.vit_global.clear();
                                for (auto& e : v) c.vit_global.push_back(read_int(e, "vit_global", what));
                              },
                              [](const ModelConfig& c) { return json(c.vit_global); }};
    t["neck_scale_factors"] =
        FieldIO{[](ModelConfig& c, const json& v, const std::string& what) {
                  SEGMUX_CHECK(v.is_array(), what, ": field 'neck_scale_factors' must be a list of numbers, got ",
                               describe_json(v));
                  c.neck_scale_factors.clear();
                  for (auto& e : v) c.neck_scale_factors.push_back(read_double(e, "neck_scale_factors", what));
                },
                [](const ModelConfig& c) { return json(c.neck_scale_factors); }};
    add_int("image_size", &ModelConfig::image_size);
    add_int("patch_size", &ModelConfig::patch_size);
    add_int("pretrain_img_size", &ModelConfig::pretrain_img_size);
    add_int("vit_dim", &ModelConfig::vit_dim);
    add_int("vit_depth", &ModelConfig::vit_depth);
    add_int("vit_heads", &ModelConfig::vit_heads);
    add_int("vit_window", &ModelConfig::vit_window);
    add_double("vit_mlp_ratio", &ModelConfig::vit_mlp_ratio);
    add_int("text_width", &ModelConfig::text_width);
    add_int("text_layers", &ModelConfig::text_layers);
    add_int("text_heads", &ModelConfig::text_heads);
    add_int("text_context_length", &ModelConfig::text_context_length);
    add_int("vocab_size", &ModelConfig::vocab_size);
    add_int("d_model", &ModelConfig::d_model);
    add_int("ffn_dim", &ModelConfig::ffn_dim);
    add_int("fusion_enc_layers", &ModelConfig::fusion_enc_layers);
    add_int("dec_layers", &ModelConfig::dec_layers);
    add_int("geo_layers", &ModelConfig::geo_layers);
    add_int("num_queries", &ModelConfig::num_queries);
    add_int("attn_heads", &ModelConfig::attn_heads);
    add_int("mem_attn_layers", &ModelConfig::mem_attn_layers);
    add_int("maskmem_starting_out_chan", &ModelConfig::maskmem_starting_out_chan);
    add_int("iou_head_hidden_dim", &ModelConfig::iou_head_hidden_dim);
    add_int("twoway_mlp_dim", &ModelConfig::twoway_mlp_dim);
    add_int("multiplex_count", &ModelConfig::multiplex_count);
    add_int("max_num_objects", &ModelConfig::max_num_objects);
    add_int("num_maskmem", &ModelConfig::num_maskmem);
    add_int("max_obj_ptrs_in_encoder", &ModelConfig::max_obj_ptrs_in_encoder);
    add_int("max_cond_frames_in_attn", &ModelConfig::max_cond_frames_in_attn);
    add_int("max_prompt_points", &ModelConfig::max_prompt_points);
    add_int("multimask_min_pt_num", &ModelConfig::multimask_min_pt_num);
    add_int("multimask_max_pt_num", &ModelConfig::multimask_max_pt_num);
    add_double("multimask_stability_delta", &ModelConfig::multimask_stability_delta);
    add_double("multimask_stability_thresh", &ModelConfig::multimask_stability_thresh);
    add_double("rope_theta", &ModelConfig::rope_theta);
    add_int("text_output_dim", &ModelConfig::text_output_dim);
    add_int("text_mlp_ratio", &ModelConfig::text_mlp_ratio);
    add_int("twoway_depth", &ModelConfig::twoway_depth);
    add_int("twoway_attn_downsample", &ModelConfig::twoway_attn_downsample);
    add_int("num_multimask_outputs", &ModelConfig::num_multimask_outputs);
    add_int("mask_in_chans", &ModelConfig::mask_in_chans);
    add_int("memory_fuser_layers", &ModelConfig::memory_fuser_layers);
    add_int("memory_fuser_kernel", &ModelConfig::memory_fuser_kernel);
    add_int("memory_fuser_mlp_ratio", &ModelConfig::memory_fuser_mlp_ratio);
    add_int("maskmem_downsample_stages", &ModelConfig::maskmem_downsample_stages);
    add_int("maskmem_downsample_kernel", &ModelConfig::maskmem_downsample_kernel);
    add_int("interactive_mask_downsample_kernel", &ModelConfig::interactive_mask_downsample_kernel);
    add_int("geo_roi_size", &ModelConfig::geo_roi_size);
    add_int("detector_max_boxes", &ModelConfig::detector_max_boxes);
    add_int("pixel_decoder_stages", &ModelConfig::pixel_decoder_stages);
    add_int("obj_ptr_proj_layers", &ModelConfig::obj_ptr_proj_layers);
    add_int("mlp_head_layers", &ModelConfig::mlp_head_layers);
    return t;
  }();
  return table;
}

void set_field(ModelConfig& cfg, const std::string& key, const json& value, const std::string& what) {
  auto it = fields().find(key);
  SEGMUX_CHECK(it != fields().end(), what, ": unknown config field '", printable(key), "'");
  it->second.read(cfg, value, what);
}

// validate_config, with the file named in its message.
void validate_in(const ModelConfig& cfg, const std::string& what) {
  try {
    validate_config(cfg);
  } catch (const Error& e) {
    fail(what, ": ", e.what());
  }
}

}  // namespace

// A config is an object of values and short lists.
constexpr JsonLimits kConfigLimits{.max_depth = 16, .max_bytes = size_t(16) << 20};

ModelConfig parse_config(const std::string& json_text, const std::string& what) {
  const json j = parse_untrusted_json(json_text, what, kConfigLimits);
  SEGMUX_CHECK(j.is_object(), what, ": a config must be a JSON object, got ", describe_json(j));
  // The golden fixtures' form is read by verification only (verify/sam31/fixture_config.h).
  SEGMUX_CHECK(!j.contains("reduced_vs_official"), what,
               " is a fixture's config.json (a 'reduced_vs_official' table), not a model config; convert it with "
               "`segmux fixture-config ",
               what, " -o model_config.json`");
  ModelConfig cfg;
  for (auto it = j.begin(); it != j.end(); ++it) set_field(cfg, it.key(), *it, what);
  validate_in(cfg, what);
  return cfg;
}

ModelConfig load_config(const std::string& path) {
  std::string text;
  try {
    text = read_untrusted_text_file(path, kConfigLimits.max_bytes);
  } catch (const Error& e) {
    fail("config file: ", e.what());
  }
  return parse_config(text, printable(path));
}

std::string config_to_json(const ModelConfig& cfg) {
  nlohmann::ordered_json j;
  for (auto& [key, io] : fields()) j[key] = io.write(cfg);
  return j.dump(1);
}

namespace {

// Upper bounds far above any SAM 3.1 variant (the official value in each comment): a hostile model.json
// (num_maskmem or text_context_length of 10^9) made buffers of gigabytes before any weight's shape could
// disagree with it. With these, every size the config derives stays small enough to allocate.
template <typename Need>
void check_upper_bounds(const ModelConfig& c, Need& need) {
  struct Bound {
    int value, max;
    const char* name;
  };
  const Bound bounds[] = {
      {c.image_size, 4096, "image_size"},                                                // 1008
      {c.patch_size, 64, "patch_size"},                                                  // 14
      {c.pretrain_img_size, 4096, "pretrain_img_size"},                                  // 336
      {c.vit_dim, 8192, "vit_dim"},                                                      // 1024
      {c.vit_depth, 256, "vit_depth"},                                                   // 32
      {c.vit_heads, 256, "vit_heads"},                                                   // 16
      {c.vit_window, 1024, "vit_window"},                                                // 24
      {c.text_width, 8192, "text_width"},                                                // 1024
      {c.text_layers, 256, "text_layers"},                                               // 24
      {c.text_heads, 256, "text_heads"},                                                 // 16
      {c.text_context_length, kMaxTextContextLength, "text_context_length"},             // 32
      {c.vocab_size, 1 << 20, "vocab_size"},                                             // 49408
      {c.d_model, 8192, "d_model"},                                                      // 256
      {c.ffn_dim, 65536, "ffn_dim"},                                                     // 2048
      {c.fusion_enc_layers, 256, "fusion_enc_layers"},                                   // 6
      {c.dec_layers, 256, "dec_layers"},                                                 // 6
      {c.geo_layers, 256, "geo_layers"},                                                 // 3
      {c.num_queries, 16384, "num_queries"},                                             // 200
      {c.attn_heads, 256, "attn_heads"},                                                 // 8
      {c.mem_attn_layers, 256, "mem_attn_layers"},                                       // 4
      {c.maskmem_starting_out_chan, 1024, "maskmem_starting_out_chan"},                  // 4
      {c.iou_head_hidden_dim, 8192, "iou_head_hidden_dim"},                              // 256
      {c.twoway_mlp_dim, 65536, "twoway_mlp_dim"},                                       // 2048
      {c.multiplex_count, 1024, "multiplex_count"},                                      // 16
      {c.max_num_objects, 4096, "max_num_objects"},                                      // 16
      {c.num_maskmem, 64, "num_maskmem"},                                                // 7
      {c.max_obj_ptrs_in_encoder, 1024, "max_obj_ptrs_in_encoder"},                      // 16
      {c.max_cond_frames_in_attn, 1024, "max_cond_frames_in_attn"},                      // 4
      {c.max_prompt_points, 4096, "max_prompt_points"},                                  // 16
      {c.text_output_dim, 8192, "text_output_dim"},                                      // 512
      {c.text_mlp_ratio, 64, "text_mlp_ratio"},                                          // 4
      {c.twoway_depth, 64, "twoway_depth"},                                              // 2
      {c.twoway_attn_downsample, 64, "twoway_attn_downsample"},                          // 2
      {c.num_multimask_outputs, 64, "num_multimask_outputs"},                            // 3
      {c.mask_in_chans, 4096, "mask_in_chans"},                                          // 16
      {c.memory_fuser_layers, 64, "memory_fuser_layers"},                                // 2
      {c.memory_fuser_kernel, 64, "memory_fuser_kernel"},                                // 7
      {c.memory_fuser_mlp_ratio, 64, "memory_fuser_mlp_ratio"},                          // 4
      {c.maskmem_downsample_stages, 16, "maskmem_downsample_stages"},                    // 4
      {c.maskmem_downsample_kernel, 64, "maskmem_downsample_kernel"},                    // 3
      {c.interactive_mask_downsample_kernel, 64, "interactive_mask_downsample_kernel"},  // 4
      {c.geo_roi_size, 64, "geo_roi_size"},                                              // 7
      {c.detector_max_boxes, 1024, "detector_max_boxes"},                                // 8
      {c.pixel_decoder_stages, 16, "pixel_decoder_stages"},                              // 3
      {c.obj_ptr_proj_layers, 64, "obj_ptr_proj_layers"},                                // 3
      {c.mlp_head_layers, 64, "mlp_head_layers"},                                        // 3
  };
  for (const Bound& b : bounds)
    need(b.value <= b.max,
         std::string(b.name) + " is " + std::to_string(b.value) + ", more than the limit of " + std::to_string(b.max));
  need(std::isfinite(c.vit_mlp_ratio) && c.vit_mlp_ratio <= 64, "vit_mlp_ratio must be at most 64");
  need(c.vit_global.size() <= 256, "vit_global lists more than 256 blocks");
  need(c.neck_scale_factors.size() <= 8, "neck_scale_factors lists more than 8 levels");
}

}  // namespace

void validate_config(const ModelConfig& c) {
  std::vector<std::string> problems;
  auto need = [&](bool ok, const std::string& msg) {
    if (!ok) problems.push_back(msg);
  };
  auto positive = [&](int v, const char* name) {
    need(v > 0, std::string(name) + " must be positive, got " + std::to_string(v));
  };
  positive(c.image_size, "image_size");
  positive(c.patch_size, "patch_size");
  positive(c.pretrain_img_size, "pretrain_img_size");
  positive(c.vit_dim, "vit_dim");
  positive(c.vit_depth, "vit_depth");
  positive(c.vit_heads, "vit_heads");
  positive(c.vit_window, "vit_window");
  positive(c.text_width, "text_width");
  positive(c.text_layers, "text_layers");
  positive(c.text_heads, "text_heads");
  positive(c.text_context_length, "text_context_length");
  positive(c.vocab_size, "vocab_size");
  positive(c.d_model, "d_model");
  positive(c.ffn_dim, "ffn_dim");
  positive(c.num_queries, "num_queries");
  positive(c.attn_heads, "attn_heads");
  positive(c.maskmem_starting_out_chan, "maskmem_starting_out_chan");
  positive(c.iou_head_hidden_dim, "iou_head_hidden_dim");
  positive(c.twoway_mlp_dim, "twoway_mlp_dim");
  positive(c.multiplex_count, "multiplex_count");
  positive(c.max_num_objects, "max_num_objects");
  positive(c.num_maskmem, "num_maskmem");
  positive(c.text_output_dim, "text_output_dim");
  positive(c.twoway_attn_downsample, "twoway_attn_downsample");
  positive(c.num_multimask_outputs, "num_multimask_outputs");
  positive(c.mask_in_chans, "mask_in_chans");
  positive(c.memory_fuser_kernel, "memory_fuser_kernel");
  positive(c.maskmem_downsample_kernel, "maskmem_downsample_kernel");
  positive(c.interactive_mask_downsample_kernel, "interactive_mask_downsample_kernel");
  positive(c.geo_roi_size, "geo_roi_size");
  positive(c.detector_max_boxes, "detector_max_boxes");
  positive(c.mlp_head_layers, "mlp_head_layers");
  positive(c.obj_ptr_proj_layers, "obj_ptr_proj_layers");
  positive(c.max_prompt_points, "max_prompt_points");
  for (auto [v, name] : {std::pair{c.fusion_enc_layers, "fusion_enc_layers"},
                         {c.dec_layers, "dec_layers"},
                         {c.geo_layers, "geo_layers"},
                         {c.mem_attn_layers, "mem_attn_layers"},
                         {c.twoway_depth, "twoway_depth"},
                         {c.memory_fuser_layers, "memory_fuser_layers"},
                         {c.maskmem_downsample_stages, "maskmem_downsample_stages"},
                         {c.pixel_decoder_stages, "pixel_decoder_stages"},
                         {c.max_obj_ptrs_in_encoder, "max_obj_ptrs_in_encoder"}})
    need(v >= 0, std::string(name) + " must not be negative, got " + std::to_string(v));
  check_upper_bounds(c, need);
  if (problems.empty()) {
    need(c.image_size % c.patch_size == 0, "image_size " + std::to_string(c.image_size) +
                                               " is not a multiple of patch_size " + std::to_string(c.patch_size));
    need(c.pretrain_img_size % c.patch_size == 0, "pretrain_img_size " + std::to_string(c.pretrain_img_size) +
                                                      " is not a multiple of patch_size " +
                                                      std::to_string(c.patch_size));
    need(c.vit_dim % c.vit_heads == 0,
         "vit_dim " + std::to_string(c.vit_dim) + " is not divisible by vit_heads " + std::to_string(c.vit_heads));
    need(c.vit_dim % c.vit_heads != 0 || c.vit_head_dim() % 4 == 0,
         "ViT head dim " + std::to_string(c.vit_dim / c.vit_heads) + " must be a multiple of 4 (2-D RoPE)");
    need(c.vit_dim % 4 == 0, "vit_dim must be a multiple of 4 (neck transposed convs)");
    need(c.text_width % c.text_heads == 0, "text_width " + std::to_string(c.text_width) +
                                               " is not divisible by text_heads " + std::to_string(c.text_heads));
    need(c.d_model % c.attn_heads == 0,
         "d_model " + std::to_string(c.d_model) + " is not divisible by attn_heads " + std::to_string(c.attn_heads));
    need(c.d_model % 8 == 0, "d_model must be a multiple of 8 (SAM mask decoder upscaling channels)");
    need(c.d_model % (2 * c.twoway_attn_downsample) == 0, "d_model must be divisible by 2 * twoway_attn_downsample");
    need(c.vit_mlp_ratio > 0, "vit_mlp_ratio must be positive");
    need(c.rope_theta > 0, "rope_theta must be positive");
    need(c.token_grid() >= c.pos_embed_pretrain_grid(), "token grid smaller than the pretrain grid");
    need(c.pos_embed_pretrain_grid() > 0 && c.token_grid() % c.pos_embed_pretrain_grid() == 0,
         "token grid " + std::to_string(c.token_grid()) + " is not a multiple of the pretrain grid " +
             std::to_string(c.pos_embed_pretrain_grid()) + " (abs-pos tiling)");
    for (int g : c.vit_global)
      need(g >= 0 && g < c.vit_depth,
           "vit_global block " + std::to_string(g) + " is outside 0.." + std::to_string(c.vit_depth - 1));
    need(!c.neck_scale_factors.empty(), "neck_scale_factors must not be empty");
    for (double s : c.neck_scale_factors)
      need(s == 4.0 || s == 2.0 || s == 1.0 || s == 0.5,
           "neck scale factor " + std::to_string(s) + " is not one of 4, 2, 1, 0.5");
  }
  if (!problems.empty()) {
    std::string msg = "config '" + c.name + "' is inconsistent:";
    for (auto& p : problems) msg += "\n  - " + p;
    fail(msg);
  }
}

}  // namespace segmux::sam31
