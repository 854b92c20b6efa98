// The tokenizer reproduces every case the official SimpleTokenizer produced for the fixtures.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {
const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
}

TEST(Tokenizer, ReproducesEveryFixtureCase) {
  std::ifstream f(kFixture + "/tokenizer/tokenizer_cases.json");
  ASSERT_TRUE(f.good());
  nlohmann::json cases = nlohmann::json::parse(f);
  const ModelConfig cfg = segmux::verify::load_fixture_config(kFixture + "/config.json");
  ASSERT_EQ(cases["context_length"].get<int>(), cfg.text_context_length);
  Tokenizer tok = Tokenizer::load(kFixture + "/tokenizer", cfg.text_context_length);
  EXPECT_EQ(tok.sot_id(), cases["sot_token_id"].get<int64_t>());
  EXPECT_EQ(tok.eot_id(), cases["eot_token_id"].get<int64_t>());
  EXPECT_EQ(tok.vocab_size(), cases["vocab_size"].get<int64_t>());
  EXPECT_EQ(tok.vocab_size(), cfg.vocab_size);

  std::vector<std::string> texts;
  size_t matched = 0, total = 0;
  for (const auto& c : cases["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int64_t>>();
    std::vector<int64_t> got = tok.tokenize_one(text);
    ++total;
    if (got == expected) {
      ++matched;
    } else {
      ADD_FAILURE() << "[" << c["group"].get<std::string>() << "] " << nlohmann::json(text).dump()
                    << "\n  cleaned: " << nlohmann::json(clean_text_lower(text)).dump() << "\n  expected "
                    << nlohmann::json(expected).dump() << "\n  got      " << nlohmann::json(got).dump();
    }
    EXPECT_EQ(tok.encode(text).size() + 2, c["num_tokens_untruncated"].get<size_t>()) << text;
    texts.push_back(text);
  }
  EXPECT_EQ(total, 371u);
  EXPECT_EQ(matched, total);
  // The batch form: int64 [N, context], row i = case i.
  Tensor ids = tok.tokenize(texts);
  ASSERT_EQ(ids.shape(), (Shape{int64_t(texts.size()), cfg.text_context_length}));
  EXPECT_EQ(ids.dtype(), DType::i64);
  size_t i = 0;
  for (const auto& c : cases["cases"]) {
    auto expected = c["ids"].get<std::vector<int64_t>>();
    std::vector<int64_t> row(ids.data<int64_t>() + i * size_t(cfg.text_context_length),
                             ids.data<int64_t>() + (i + 1) * size_t(cfg.text_context_length));
    EXPECT_EQ(row, expected) << i;
    ++i;
  }
}

TEST(Tokenizer, CleaningSteps) {
  EXPECT_EQ(html_unescape("&amp;lt; &#65; &#x42; &copy &notit; &#0; &#1; &#99999999999; &bogus;"),
            "&lt; A B \u00a9 \u00acit; \ufffd  \ufffd &bogus;");
  EXPECT_EQ(ftfy_fix_text("sch\u00c3\u00b6n"), "sch\u00f6n");                // UTF-8 read as Latin-1
  EXPECT_EQ(ftfy_fix_text("don\u00e2\u20ac\u2122t"), "don't");               // ... as windows-1252, then uncurled
  EXPECT_EQ(ftfy_fix_text("\uff21\uff22\u3000x"), "AB x");                   // full width
  EXPECT_EQ(ftfy_fix_text("\ufb01ne"), "fine");                              // ligature
  EXPECT_EQ(ftfy_fix_text("a\x1b[31mb\x01"), "ab");                          // terminal escape, control char
  EXPECT_EQ(ftfy_fix_text("caf\u00e9 na\u00efve"), "caf\u00e9 na\u00efve");  // legitimate Latin-1 stays
  EXPECT_EQ(ftfy_fix_text("e\u0301"), "\u00e9");                             // NFC
  EXPECT_EQ(ftfy_fix_text("&BUNDESSTRA&SZLIG;E"), "&BUNDESSTRASSE");
  EXPECT_EQ(ftfy_fix_text("<b>&amp;</b>"), "<b>&amp;</b>");  // '<' turns ftfy's unescape off
  EXPECT_EQ(clean_text_lower("  Hello\t\tWORLD \u00a0 "), "hello world");
  EXPECT_EQ(clean_text_lower("\u0130stanbul"), "i\u0307stanbul");  // Python's str.lower()
  EXPECT_THROW(clean_text_lower("bad \xff utf-8"), Error);
}

TEST(Tokenizer, TruncationPaddingAndVocabularyLookup) {
  Tokenizer tok = Tokenizer::load(kFixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz", 8);
  std::vector<int64_t> ids = tok.tokenize_one("dog dog dog dog dog dog dog dog dog");
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_EQ(ids.front(), tok.sot_id());
  EXPECT_EQ(ids.back(), tok.eot_id());  // truncated: last id forced to EOT
  EXPECT_EQ(ids[1], ids[6]);
  std::vector<int64_t> short_ids = tok.tokenize_one("dog");
  EXPECT_EQ(short_ids, (std::vector<int64_t>{tok.sot_id(), ids[1], tok.eot_id(), 0, 0, 0, 0, 0}));
  EXPECT_EQ(tok.decode({ids[1], ids[2]}), "dog dog ");
  // The vocabulary is found next to a checkpoint file too, and a clear error names where it looked.
  EXPECT_EQ(Tokenizer::find_vocabulary(kFixture + "/tokenizer/tokenizer_cases.json"),
            kFixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz");
  EXPECT_EQ(Tokenizer::find_vocabulary(kFixture), kFixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz");
  try {
    Tokenizer::find_vocabulary(kFixture + "/video");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bpe_simple_vocab_16e6.txt.gz not found"), std::string::npos) << e.what();
  }
}
