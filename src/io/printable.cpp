#include "io/printable.h"

#include <cstdint>
#include <cstdio>

namespace segmux {

namespace {

void append_escape(std::string& out, uint8_t byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(byte));
  out += buf;
}

}  // namespace

size_t decode_utf8_sequence(std::string_view s, size_t i, char32_t* code_point) {
  const auto c = uint8_t(s[i]);
  if (c < 0x80) {
    if (code_point) *code_point = c;
    return 1;
  }
  size_t len;
  char32_t cp, min;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto cc = uint8_t(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (code_point) *code_point = cp;
  return len;
}

size_t first_invalid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = decode_utf8_sequence(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

bool is_valid_utf8(std::string_view text) { return first_invalid_utf8(text) == std::string_view::npos; }

std::string printable(std::string_view text, size_t max_bytes) {
  std::string out;
  const size_t shown = text.size() > max_bytes ? max_bytes : text.size();
  out.reserve(shown + 8);
  for (size_t i = 0; i < shown;) {
    const size_t len = decode_utf8_sequence(text, i);
    const auto c = uint8_t(text[i]);
    if (len == 0 || i + len > shown || c < 0x20 || c == 0x7F) {
      append_escape(out, c);
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  if (shown < text.size()) out += "...";
  return out;
}

}  // namespace segmux
