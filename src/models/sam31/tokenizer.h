// SAM 3.1 text tokenizer: CLIP byte-level BPE over the official vocabulary
// (bpe_simple_vocab_16e6.txt.gz), with the official clean='lower' preprocessing:
// ftfy.fix_text -> html.unescape twice -> strip -> collapse whitespace -> lower-case,
// then the regex split, byte-to-unicode mapping, BPE merges, [SOT] ids [EOT], truncation to the
// context length with the last id forced to EOT, and zero padding.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace segmux::sam31 {

// The longest text context a config or a tokenizer accepts (official: 32; CLIP: 77).
constexpr int kMaxTextContextLength = 1024;

class Tokenizer {
 public:
  // `path`: the gzip'd merges file itself, a folder holding bpe_simple_vocab_16e6.txt.gz (directly or
  // in its tokenizer/ subfolder), or a checkpoint file (then its folder is searched).
  static Tokenizer load(const std::string& path, int context_length = 32);
  // Where load() would read the vocabulary from; throws naming the places it looked.
  static std::string find_vocabulary(const std::string& path);
  // From the vocabulary's text (the merges file, already decompressed); `what` names it in errors.
  static Tokenizer from_merges_text(const std::string& text, int context_length, const std::string& what);

  // int64 ids [texts.size(), context_length].
  Tensor tokenize(const std::vector<std::string>& texts) const;
  std::vector<int64_t> tokenize_one(const std::string& text) const;  // context_length ids
  // BPE ids of the cleaned text, without SOT/EOT and without truncation.
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;  // for tests and tools

  int64_t sot_id() const { return sot_id_; }
  int64_t eot_id() const { return eot_id_; }
  int64_t vocab_size() const { return int64_t(id_to_token_.size()); }
  int context_length() const { return context_length_; }

 private:
  std::string bpe(const std::string& token) const;  // space-separated symbols
  std::string bpe_merge(const std::u32string& chars) const;
  // BPE ids of the cleaned text, stopping once `max_ids` ids are known (later text cannot change them).
  std::vector<int64_t> encode_prefix(const std::string& text, size_t max_ids) const;
  static constexpr size_t kMaxCachedTokenBytes = 256;

  int context_length_ = 32;
  std::unordered_map<std::string, int64_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<std::string, int> merge_rank_;  // "first second" -> rank
  std::string byte_to_symbol_[256];                  // bytes_to_unicode, UTF-8 encoded
  int64_t sot_id_ = 0, eot_id_ = 0;
  // bpe() cache, shared by copies of this tokenizer.
  struct Cache {
    std::mutex mutex;
    std::unordered_map<std::string, std::string> entries;
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

// The official clean='lower' preprocessing (UTF-8 in, UTF-8 out). Invalid UTF-8 -> segmux::Error.
std::string clean_text_lower(const std::string& text);
// The parts of ftfy 6.1.1's fix_text that the cleaning relies on (see tokenizer.cpp for the subset).
std::string ftfy_fix_text(const std::string& text);
// Python's html.unescape.
std::string html_unescape(const std::string& text);

}  // namespace segmux::sam31
