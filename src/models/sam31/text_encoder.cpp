#include "models/sam31/text_encoder.h"
#include "models/sam31/tensor_names.h"

#include <limits>
#include <sstream>

#include "models/sam31/contract.h"
#include "models/sam31/layers.h"

namespace segmux::sam31 {

namespace L = layers;

namespace {
const char* kPrefix = "detector.backbone.language_backbone";
}

ir::Graph build_text_encoder(const ModelConfig& cfg, const Weights& w, const TextEncoderOptions& opt) {
  SEGMUX_CHECK(opt.batch >= 1, "text encoder batch must be >= 1, got ", opt.batch);
  SEGMUX_CHECK(cfg.text_width % cfg.text_heads == 0, "text_width ", cfg.text_width, " is not divisible by text_heads ",
               cfg.text_heads);
  ir::Graph g;
  g.name = "text_encoder";
  ir::GraphBuilder b(g);
  const std::string enc = std::string(kPrefix) + ".encoder";
  const int64_t B = opt.batch, T = cfg.text_context_length, W = cfg.text_width;

  int ids = b.input(names::text_encoder::kTokenIds, DType::i64, {B, T});

  const Tensor& table = w.get(enc + ".token_embedding.weight");
  SEGMUX_CHECK(table.rank() == 2 && table.dim(0) == cfg.vocab_size && table.dim(1) == W, "token embedding ",
               shape_str(table.shape()), " does not match vocab_size ", cfg.vocab_size, " x text_width ", W);
  const Tensor& pos = w.get(enc + ".positional_embedding");
  SEGMUX_CHECK(pos.rank() == 2 && pos.dim(0) >= T && pos.dim(1) == W, "positional embedding ", shape_str(pos.shape()),
               " does not cover context ", T, " x ", W);

  int emb = L::gather(b, L::param(b, w, enc + ".token_embedding.weight"), ids, 0);  // [B,T,W]
  int x;
  {
    ir::Scope s(b, "embed");
    int pos_v = L::param(b, w, enc + ".positional_embedding");
    if (pos.dim(0) != T) pos_v = L::slice(b, pos_v, 0, 0, T);
    x = L::add(b, emb, pos_v);
  }

  // Causal mask: -inf above the diagonal (TextTransformer.build_causal_mask).
  std::vector<float> causal(size_t(T * T), 0.0f);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = i + 1; j < T; ++j) causal[size_t(i * T + j)] = -std::numeric_limits<float>::infinity();
  int causal_v = L::const_f32(b, {T, T}, causal, "causal_mask");

  for (int layer = 0; layer < cfg.text_layers; ++layer) {
    const std::string p = enc + ".transformer.resblocks." + std::to_string(layer);
    ir::Scope s(b, "resblocks." + std::to_string(layer));
    int h = L::layer_norm(b, w, x, p + ".ln_1");
    L::MhaOptions mo;
    mo.heads = cfg.text_heads;
    mo.seq_first = false;
    mo.attn_bias = causal_v;
    x = L::add(b, x, L::multihead_attention(b, w, p + ".attn", h, h, h, mo));
    h = L::layer_norm(b, w, x, p + ".ln_2");
    h = L::gelu_erf(b, L::linear(b, w, h, p + ".mlp.c_fc"));
    x = L::add(b, x, L::linear(b, w, h, p + ".mlp.c_proj"));
  }
  x = L::layer_norm(b, w, x, enc + ".ln_final");
  int seq_first = L::transpose(b, x, {1, 0, 2});  // (T,B,W)
  int features = L::linear(b, w, seq_first, std::string(kPrefix) + ".resizer");
  int mask = b.op1("Equal", {ids, b.constant(Tensor::scalar<int64_t>(0), "pad_id")});

  b.output(features, names::text_encoder::kLanguageFeatures);
  b.output(mask, names::text_encoder::kLanguageMask);
  b.output(L::transpose(b, emb, {1, 0, 2}), names::text_encoder::kLanguageEmbeds);
  g.metadata["candidate"] = "text_encoder";
  return g;
}

ir::Graph build_text_encoder_default(const ModelConfig& cfg, const Weights& w) { return build_text_encoder(cfg, w); }

contract::Description text_encoder_contract(const ModelConfig& cfg) {
  namespace n = names::text_encoder;
  contract::Description d;
  d.summary = "SAM 3.1 VETextEncoder: token embedding + learned positional embedding, " +
              std::to_string(cfg.text_layers) +
              " pre-LN causal CLIP blocks (GELU-erf MLP), ln_final, resizer Linear(text_width -> d_model). "
              "Batch B = " +
              std::to_string(TextEncoderOptions{}.batch) +
              " prompts per run (the video run encodes [prompt, \"visual\", \"geometric\"]); "
              "outputs are sequence-first as in the official code.";
  d.inputs[n::kTokenIds] = {"SimpleTokenizer ids: [SOT] text [EOT], zero-padded to the context length",
                            "tokenizer (tokenizer.h)"};
  d.outputs[n::kLanguageFeatures] = {"text tokens after ln_final and the resizer (seq-first)",
                                     "detector input language_features"};
  d.outputs[n::kLanguageMask] = {"True = padding position (token id == 0)", "detector input language_mask"};
  d.outputs[n::kLanguageEmbeds] = {"raw token embeddings (encoder input before the positional embedding, seq-first)",
                                   "kept for the official API; unused by the video pipeline"};
  return d;
}

}  // namespace segmux::sam31
