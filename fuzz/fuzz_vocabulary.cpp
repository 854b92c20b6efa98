// libFuzzer target: any vocabulary text (the decompressed merges file) gives a tokenizer or a
// segmux::Error, and a tokenizer made from it tokenizes a few prompts without crashing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_vocab.h"
#include "io_seeds.h"
#include "models/sam31/tokenizer.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    return std::vector<std::string>{segmux::fuzz::generated_merges(), "#version: 0.2\nh e\nhe l\nhel lo</w>\n",
                                    "#v\n\xc3\xa9 t\n\xc4\xa0 a\n a  b  c \n\n"};
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = segmux::sam31::Tokenizer::from_merges_text(text, 16, "fuzz vocabulary");
    // One prompt (fuzz_tokenizer covers text): BPE over merges of any shape, special tokens included.
    const auto ids = tok.tokenize_one("hello, the WORLD 42 caf\xc3\xa9 <start_of_text>dog");
    for (int64_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
  } catch (const segmux::Error&) {
  }
  return 0;
}
