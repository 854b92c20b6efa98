// Names that come from untrusted files (tensor names, zip entries, JSON keys, paths) quoted safely for
// error messages: invalid UTF-8 and control characters become \xNN escapes and long names are cut,
// so a message is always valid UTF-8 (JSON output of it cannot fail) and fits on a screen.
#pragma once
#include <string>
#include <string_view>

namespace segmux {

// Valid UTF-8 is kept as is (except control characters); anything else is escaped. At most
// `max_bytes` bytes of the input are shown, then "...".
std::string printable(std::string_view text, size_t max_bytes = 200);

// The well-formed UTF-8 sequence starting at s[i]: its length (its code point in *code_point when
// given), or 0 when it is not one (overlong, surrogate, above U+10FFFF, truncated). i < s.size().
size_t decode_utf8_sequence(std::string_view s, size_t i, char32_t* code_point = nullptr);
// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view text);
// Offset of the first byte that does not start a well-formed sequence; npos when there is none.
size_t first_invalid_utf8(std::string_view text);

}  // namespace segmux
