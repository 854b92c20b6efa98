// segmux tokenize: the SAM 3.1 text tokenizer from the command line (ids as JSON, or an int64 .safetensors).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/commands.h"
#include "io/safetensors.h"
#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {

namespace {

int tokenize_main(int argc, char** argv) {
  CLI::App app{
      "Tokenize text prompts as SAM 3.1 does ([SOT] BPE ids [EOT], truncated and zero-padded to the "
      "context length). Prints one JSON object per text, or writes int64 ids [N, context] to a "
      ".safetensors file (tensor 'input_ids').",
      "segmux tokenize"};
  std::vector<std::string> texts;
  std::string vocab, config, out;
  int context = 0;
  bool show_clean = false;
  app.add_option("text", texts, "prompt(s)")->required();
  app.add_option("--vocab", vocab, "bpe_simple_vocab_16e6.txt.gz, or a folder / checkpoint next to it")->required();
  app.add_option("--config", config, "config file (its text_context_length); default: full size");
  auto* context_opt = app.add_option("--context", context, "context length (overrides the config)");
  app.add_option("-o,--output,--out", out, "write the ids to this .safetensors file");
  app.add_flag("--show-clean", show_clean, "also print the cleaned text");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  const sam31::ModelConfig cfg =
      config.empty() ? sam31::default_config() : verify::load_model_or_fixture_config(config);
  // A given --context is used as given (the tokenizer refuses one below 2); -1 was silently ignored.
  SEGMUX_USAGE_CHECK(!*context_opt || (context >= 2 && context <= sam31::kMaxTextContextLength), "--context ", context,
                     " is not a context length (2..", sam31::kMaxTextContextLength, " tokens)");
  const sam31::Tokenizer tok = sam31::Tokenizer::load(vocab, *context_opt ? context : cfg.text_context_length);
  Tensor ids = tok.tokenize(texts);
  if (!out.empty()) {
    write_safetensors(out, {{"input_ids", ids}});
    std::printf("wrote %s: input_ids int64 %s\n", out.c_str(), shape_str(ids.shape()).c_str());
    return 0;
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    nlohmann::json j;
    j["text"] = texts[i];
    if (show_clean) j["clean"] = sam31::clean_text_lower(texts[i]);
    const int64_t* row = ids.data<int64_t>() + i * size_t(tok.context_length());
    j["ids"] = std::vector<int64_t>(row, row + tok.context_length());
    std::printf("%s\n", json_text(j).c_str());
  }
  return 0;
}

CommandRegistration tokenize_registration("tokenize", "tokenize text prompts (SAM 3.1 CLIP BPE)", tokenize_main);

}  // namespace

}  // namespace segmux::apps
