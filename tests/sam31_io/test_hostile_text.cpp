// Hostile prompts and model.json values (issue 22): a long word no longer holds the model (BPE was
// quadratic, and text past the context was merged for nothing), with ids identical to the official
// algorithm's for any text and any merges table; absurd config sizes are refused at load.
#include <gtest/gtest.h>
#include <time.h>
#include <zlib.h>

#include <climits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {

const std::string kVocab = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/tokenizer/bpe_simple_vocab_16e6.txt.gz";

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return "";
  std::string out;
  char buf[65536];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

// The official BPE loop, written from its definition as plainly as possible (quadratic; the oracle):
// while a pair of adjacent symbols is in the merges table, take the lowest-ranked one and merge its
// every occurrence, scanning left to right. Merge ranks as the official file slice gives them.
struct ReferenceBpe {
  std::map<std::pair<std::string, std::string>, int> rank;
  explicit ReferenceBpe(const std::string& merges_text) {
    std::vector<std::string> lines;
    for (size_t pos = 0, nl; pos <= merges_text.size(); pos = nl + 1) {
      nl = merges_text.find('\n', pos);
      if (nl == std::string::npos) nl = merges_text.size();
      lines.push_back(merges_text.substr(pos, nl - pos));
    }
    for (size_t i = 1; i < lines.size() && i < size_t(49152 - 256 - 2 + 1); ++i) {
      const size_t sp = lines[i].find(' ');
      if (sp != std::string::npos) rank[{lines[i].substr(0, sp), lines[i].substr(sp + 1)}] = int(i - 1);
    }
  }
  // Symbols of one word of ASCII letters, each shown as decode() shows a single id ("</w>" as a space).
  std::vector<std::string> symbols(const std::string& word) const {
    std::vector<std::string> w;
    for (char c : word) w.push_back(std::string(1, c));
    w.back() += "</w>";
    while (w.size() > 1) {
      int best = INT_MAX;
      std::pair<std::string, std::string> pair;
      for (size_t i = 0; i + 1 < w.size(); ++i) {
        auto it = rank.find({w[i], w[i + 1]});
        if (it != rank.end() && it->second < best) best = it->second, pair = it->first;
      }
      if (best == INT_MAX) break;
      std::vector<std::string> merged;
      for (size_t i = 0; i < w.size();) {
        if (i + 1 < w.size() && w[i] == pair.first && w[i + 1] == pair.second) {
          merged.push_back(w[i] + w[i + 1]);
          i += 2;
        } else {
          merged.push_back(w[i++]);
        }
      }
      w = std::move(merged);
    }
    for (auto& s : w)
      if (s.size() >= 4 && s.compare(s.size() - 4, 4, "</w>") == 0) s.replace(s.size() - 4, 4, " ");
    return w;
  }
};

std::vector<std::string> shown(const Tokenizer& tok, const std::vector<int64_t>& ids) {
  std::vector<std::string> out;
  for (int64_t id : ids) out.push_back(tok.decode({id}));
  return out;
}

std::string random_word(std::mt19937& rng, size_t length, int letters) {
  std::string w;
  for (size_t i = 0; i < length; ++i) w += char('a' + int(rng() % unsigned(letters)));
  return w;
}

}  // namespace

TEST(HostileText, BpeMatchesTheOfficialLoopOnLongWords) {
  const std::string merges = read_gz(kVocab);
  if (merges.empty()) GTEST_SKIP() << "vocabulary not found: " << kVocab;
  const ReferenceBpe ref(merges);
  const Tokenizer tok = Tokenizer::from_merges_text(merges, 32, kVocab);
  std::mt19937 rng(22);
  // Long words over every alphabet size: 2-3 letters repeat pairs (overlapping occurrences), 26 not.
  for (int letters : {1, 2, 3, 5, 26})
    for (size_t length : {size_t(1), size_t(2), size_t(7), size_t(64), size_t(500), size_t(2500)}) {
      const std::string w = random_word(rng, length, letters);
      ASSERT_EQ(shown(tok, tok.encode(w)), ref.symbols(w)) << letters << " letters, " << length << ": " << w;
    }
}

TEST(HostileText, BpeMatchesTheOfficialLoopForAnyMergesTable) {
  // A table no trained vocabulary has: merges of merged symbols ranked before the merges that make
  // them ("ab c" before "a b"), chains of competing pairs, and a pair of equal symbols ("a a").
  const std::string merges =
      "#version\nb c\nab c\nc d\na b\na a\nbc d\naa a\nd a\nab cd\ncd a\na bc\nabc d\nc c\ncc c\nb b\n";
  const ReferenceBpe ref(merges);
  const Tokenizer tok = Tokenizer::from_merges_text(merges, 32, "synthetic merges");
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    const std::string w = random_word(rng, 1 + rng() % 300, 4);
    ASSERT_EQ(shown(tok, tok.encode(w)), ref.symbols(w)) << w;
  }
}

TEST(HostileText, AHugeWordIsTokenizedQuicklyAndExactly) {
  const Tokenizer tok = Tokenizer::load(kVocab, 32);
  std::mt19937 rng(1);
  // Before: 100k letters held the model 15 s (quadratic merges; 45 s of CPU on the CI machine). Now
  // under a second of CPU; 10 s cannot flake.
  const std::string word = random_word(rng, 100000, 26);
  double t0 = thread_cpu_seconds();
  const std::vector<int64_t> ids = tok.tokenize_one(word);
  EXPECT_LT(thread_cpu_seconds() - t0, 10.0);
  // The same first 30 ids as the whole word's encoding (SOT, 30 ids, EOT forced last).
  std::vector<int64_t> all = tok.encode(word);
  ASSERT_GT(all.size(), 30u);
  std::vector<int64_t> expected = {tok.sot_id()};
  expected.insert(expected.end(), all.begin(), all.begin() + 30);
  expected.push_back(tok.eot_id());
  EXPECT_EQ(ids, expected);
  // Many words: only the first context's worth is merged; the ids are those of the full encoding.
  std::string text;
  for (int k = 0; k < 100000; ++k) text += random_word(rng, 1 + rng() % 12, 26) + (k % 7 ? " " : ", ");
  t0 = thread_cpu_seconds();
  const std::vector<int64_t> many = tok.tokenize_one(text);
  const double prefix_seconds = thread_cpu_seconds() - t0;
  all = tok.encode(text);
  expected.assign(1, tok.sot_id());
  expected.insert(expected.end(), all.begin(), all.begin() + 30);
  expected.push_back(tok.eot_id());
  EXPECT_EQ(many, expected);
  EXPECT_LT(prefix_seconds, 10.0);
  // Exactly at the context (30 ids: no truncation) and one id short, against the full form.
  for (size_t n : {size_t(29), size_t(30), size_t(31)}) {
    std::string words;
    for (size_t k = 0; k < n; ++k) words += "dog ";
    std::vector<int64_t> want = {tok.sot_id()};
    const std::vector<int64_t> enc = tok.encode(words);
    want.insert(want.end(), enc.begin(), enc.begin() + std::min<std::ptrdiff_t>(30, std::ptrdiff_t(enc.size())));
    want.push_back(tok.eot_id());
    want.resize(32, 0);
    EXPECT_EQ(tok.tokenize_one(words), want) << n;
  }
}

TEST(HostileText, ContextLengthIsBounded) {
  EXPECT_THROW(Tokenizer::load(kVocab, 1), Error);
  try {
    Tokenizer::load(kVocab, 1000000);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context length 1000000 is more than the limit of 1024"), std::string::npos)
        << e.what();
  }
}

TEST(HostileConfig, AbsurdSizesAreRefusedAtLoad) {
  // Before: these allocated gigabytes before any weight's shape was compared.
  struct Case {
    std::string json, message;
  };
  const std::vector<Case> cases = {
      {R"({"num_maskmem": 1000000000})", "num_maskmem is 1000000000, more than the limit of 64"},
      {R"({"text_context_length": 2000000000})", "text_context_length is 2000000000, more than the limit of 1024"},
      {R"({"max_num_objects": 100000000})", "max_num_objects is 100000000, more than the limit of 4096"},
      {R"({"image_size": 1400000})", "image_size is 1400000, more than the limit of 4096"},
      {R"({"vit_mlp_ratio": 1e300})", "vit_mlp_ratio must be at most 64"},
  };
  for (const Case& c : cases) {
    try {
      parse_config(c.json, "model.json");
      ADD_FAILURE() << c.json << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("model.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  // The official sizes and the fixtures' are well inside.
  EXPECT_NO_THROW(validate_config(default_config()));
  EXPECT_NO_THROW(segmux::verify::load_fixture_config(std::string(SEGMUX_FIXTURES) + "/sam31-tiny/config.json"));
}
