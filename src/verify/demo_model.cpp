#include "verify/demo_model.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "verify/sam31/random_checkpoint.h"

namespace segmux::verify {

namespace fs = std::filesystem;

namespace {

// A merges file with no merges: byte-level tokens only (the demo model has no vocabulary file).
void write_byte_level_vocab(const std::string& path) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  gzFile f = gzopen(tmp.c_str(), "wb");
  SEGMUX_CHECK(f != nullptr, "cannot write '", tmp, "'");
  const char header[] = "#version: byte-level demo vocabulary (no merges)\n";
  gzwrite(f, header, unsigned(sizeof header - 1));
  gzclose(f);
  SEGMUX_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot write '", path, "'");
}

}  // namespace

sam31::ModelConfig demo_config() {
  sam31::ModelConfig c;
  c.name = "segmux-demo-tiny";
  c.image_size = 168;
  c.pretrain_img_size = 84;
  c.vit_dim = 64;
  c.vit_depth = 4;
  c.vit_heads = 4;
  c.vit_window = 6;
  c.vit_global = {1, 3};
  c.text_width = 64;
  c.text_layers = 2;
  c.text_heads = 4;
  c.d_model = 64;
  c.ffn_dim = 256;
  c.fusion_enc_layers = 2;
  c.dec_layers = 2;
  c.geo_layers = 2;
  c.num_queries = 20;
  c.mem_attn_layers = 2;
  c.maskmem_starting_out_chan = 1;
  c.iou_head_hidden_dim = 64;
  c.twoway_mlp_dim = 256;
  c.multiplex_count = 4;
  c.max_num_objects = 8;
  return c;
}

std::string ensure_demo_model(const std::string& cache_dir, const pipeline::LogFn& log) {
  const sam31::ModelConfig cfg = demo_config();
  const std::string cache = cache_dir.empty() ? pipeline::default_cache_dir() : cache_dir;
  const std::string dir =
      cache + "/demo-" + std::to_string(pipeline::cache_hash(sam31::config_to_json(cfg) + pipeline::build_identity()));
  pipeline::ensure_model_dir(
      dir,
      [&](const std::string& tmp) {
        fs::create_directories(tmp);
        const std::string weights = tmp + "/weights.pt", vocab = tmp + "/bpe_simple_vocab_16e6.txt.gz";
        write_random_checkpoint(weights, cfg, 1234);
        write_byte_level_vocab(vocab);
        pipeline::compile_model_dir(cfg, weights, vocab, tmp, log);
      },
      "generating the demo model (tiny, random weights with official key names) in " + dir, log);
  return dir;
}

}  // namespace segmux::verify
