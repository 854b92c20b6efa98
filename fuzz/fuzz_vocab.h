// A small BPE merges file generated in code (the tokenizer fuzz targets' vocabulary and seeds): the
// header line, then merges of common letter pairs and of their results, as CLIP's file is laid out.
#pragma once
#include <string>

namespace segmux::fuzz {

inline std::string generated_merges() {
  std::string text = "\"bpe_simple_vocab_16e6.txt#version: 0.2\n";
  const std::string letters = "etaoinshrdlucmfwypvbgkqjxz";
  for (char a : letters.substr(0, 12))
    for (char b : letters.substr(0, 12)) text += std::string(1, a) + " " + std::string(1, b) + "\n";
  for (char a : letters) text += std::string(1, a) + " " + "e</w>\n";
  text += "th e</w>\nd og</w>\nc at</w>\nph oto</w>\n";
  return text;
}

}  // namespace segmux::fuzz
