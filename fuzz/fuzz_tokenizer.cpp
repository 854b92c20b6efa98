// libFuzzer targets for the text tokenizer. fuzz_tokenizer: any prompt bytes tokenize (cleaning, ftfy
// subset, regex split, BPE) or give a segmux::Error (invalid UTF-8). The vocabulary is the real one when
// SEGMUX_FUZZ_VOCAB names it (scripts/fuzz.sh passes the fixture's), else a small generated one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "fuzz_vocab.h"
#include "io_seeds.h"
#include "models/sam31/tokenizer.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    return std::vector<std::string>{"a photo of a dog", "Two CATS &amp; a dog&#39;s ball, 3 more!",
                                    "caf\xc3\xa9 \xef\xac\x81sh \xe2\x80\x9cquoted\xe2\x80\x9d \xef\xbc\xa1",
                                    "mojibake: \xc3\x83\xc2\xa9t\xc3\x83\xc2\xa9\n\tnew line\r\n  spaces   ",
                                    "\xe7\x8c\xab \xf0\x9f\x90\xb6 emoji &lt;b&gt;bold&lt;/b&gt;"};
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const segmux::sam31::Tokenizer tok = [] {
    const char* path = std::getenv("SEGMUX_FUZZ_VOCAB");
    if (path && *path) return segmux::sam31::Tokenizer::load(path, 32);
    return segmux::sam31::Tokenizer::from_merges_text(segmux::fuzz::generated_merges(), 32, "generated vocabulary");
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<int64_t> ids = tok.tokenize_one(text);
    if (ids.size() != 32 || ids.front() != tok.sot_id()) __builtin_trap();
    for (int64_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
    tok.decode(ids);
  } catch (const segmux::Error&) {
  }
  return 0;
}
