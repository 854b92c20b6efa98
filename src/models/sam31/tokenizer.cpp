// SAM 3.1 tokenizer (see tokenizer.h).
//
// Text cleaning follows the official clean='lower' path: ftfy.fix_text (ftfy 6.1.1, the version sam3
// pins), html.unescape twice, strip, whitespace collapse, strip, str.lower(). ftfy is reproduced as
// far as the tokenizer's inputs need it:
//   - per line segment (split after '\n'), repeated until nothing changes: ftfy's own HTML-entity
//     unescaping (off from the first segment containing '<' on), the encoding fix, C1 controls,
//     Latin ligatures, full/half-width forms, curly quotes, line breaks, terminal escapes, control
//     characters, NFC;
//   - the encoding fix re-reads a segment that re-encodes in one of ftfy's single-byte encodings
//     (latin-1, sloppy windows-1252/1251/1250/1253/1254, iso-8859-2, macroman, cp437, in that order)
//     as valid UTF-8, then tries latin-1 -> windows-1252 and fix_c1_controls, like ftfy.
//   Differences: ftfy additionally gates the encoding fix with its "badness" heuristic (which flags
//   every mojibake this re-decoding can fix, so the two only differ on legitimate text whose single-
//   byte encoding happens to be valid UTF-8), and its sub-fixes restore_byte_a0,
//   replace_lossy_sequences, the utf-8-variants (CESU-8) decoder and decode_inconsistent_utf8 (mojibake
//   mixed with text outside the single-byte encoding) are not reproduced.
//
// tokenizer_tables.inc holds generated data: the HTML5 named character references (as Python's
// html.entities.html5) and bytes 0x80-0xFF of ftfy's single-byte encodings (as Python's codecs, with
// ftfy's "sloppy" fill of undefined bytes). It was produced by a short Python script that prints
// those standard-library tables; regenerate the same way if ever needed.
#include "models/sam31/tokenizer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "io/alloc_guard.h"
#include "io/file_kind.h"
#include "io/printable.h"

namespace segmux::sam31 {

namespace {

struct HtmlEntity {
  const char* name;
  const char* value;
};
struct SingleByteCharmap {
  const char* name;
  bool sloppy;
  char32_t high[128];  // bytes 0x80..0xFF
};
#include "models/sam31/tokenizer_tables.inc"

using U32 = std::u32string;

// ---- UTF-8 / UTF-32 / ICU conversions ----

// Strict decoding (as Python's bytes.decode('utf-8')): returns false on any invalid sequence.
bool decode_utf8(const std::string& s, U32* out) {
  out->clear();
  out->reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t len = decode_utf8_sequence(s, i, &cp);
    if (len == 0) return false;
    out->push_back(cp);
    i += len;
  }
  return true;
}

U32 from_utf8(const std::string& s) {
  U32 out;
  if (!decode_utf8(s, &out)) {
    const size_t at = std::min(first_invalid_utf8(s), s.size());
    fail("tokenizer: the text is not valid UTF-8 (at byte ", at, ": '", printable(s.substr(at, 8)), "')");
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(char(c));
  } else if (c < 0x800) {
    out.push_back(char(0xC0 | (c >> 6)));
    out.push_back(char(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(char(0xE0 | (c >> 12)));
    out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(char(0x80 | (c & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (c >> 18)));
    out.push_back(char(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(char(0x80 | (c & 0x3F)));
  }
}

std::string to_utf8(const U32& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

icu::UnicodeString to_icu(const U32& s) {
  return icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(s.data()), int32_t(s.size()));
}

U32 from_icu(const icu::UnicodeString& u) {
  U32 out;
  for (int32_t i = 0; i < u.length();) {
    UChar32 c = u.char32At(i);
    out.push_back(char32_t(c));
    i += U16_LENGTH(c);
  }
  return out;
}

U32 icu_lower(const U32& s) { return from_icu(to_icu(s).toLower(icu::Locale::getRoot())); }
U32 icu_upper(const U32& s) { return from_icu(to_icu(s).toUpper(icu::Locale::getRoot())); }

U32 normalize(const U32& s, bool compatibility) {
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2* n =
      compatibility ? icu::Normalizer2::getNFKCInstance(st) : icu::Normalizer2::getNFCInstance(st);
  SEGMUX_CHECK(U_SUCCESS(st), "tokenizer: ICU normalizer unavailable: ", u_errorName(st));
  icu::UnicodeString out = n->normalize(to_icu(s), st);
  SEGMUX_CHECK(U_SUCCESS(st), "tokenizer: ICU normalization failed: ", u_errorName(st));
  return from_icu(out);
}

// Python's str.isspace(): the White_Space property plus the separators U+001C..U+001F.
bool py_isspace(char32_t c) { return (c >= 0x1C && c <= 0x1F) || u_hasBinaryProperty(UChar32(c), UCHAR_WHITE_SPACE); }

U32 py_strip(const U32& s) {
  size_t b = 0, e = s.size();
  while (b < e && py_isspace(s[b])) ++b;
  while (e > b && py_isspace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool is_ascii(const U32& s) {
  return std::all_of(s.begin(), s.end(), [](char32_t c) { return c < 0x80; });
}

// ---- Python's html.unescape ----

const std::unordered_map<std::string, U32>& html5_entities() {
  static const auto table = [] {
    std::unordered_map<std::string, U32> t;
    for (const auto& e : kHtml5Entities) t[e.name] = from_utf8(e.value);
    return t;
  }();
  return table;
}

const SingleByteCharmap& charmap(const char* name) {
  for (const auto& m : kCharmaps)
    if (std::string(m.name) == name) return m;
  fail("tokenizer: no charmap '", name, "'");
}

bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_ascii_hex(char32_t c) { return is_ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_ascii_alnum(char32_t c) { return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A numeric character reference as html.unescape resolves it.
U32 numeric_charref(uint64_t num) {
  if (num == 0x00) return U"\uFFFD";
  if (num == 0x0D) return U"\r";
  if (num >= 0x80 && num <= 0x9F) return U32(1, charmap("sloppy-windows-1252").high[num - 0x80]);
  if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) return U"\uFFFD";
  const bool invalid = (num >= 0x1 && num <= 0x8) || num == 0xB || (num >= 0xE && num <= 0x1F) ||
                       (num >= 0x7F && num <= 0x9F) || (num >= 0xFDD0 && num <= 0xFDEF) || (num & 0xFFFE) == 0xFFFE;
  if (invalid) return U"";
  return U32(1, char32_t(num));
}

U32 html_unescape_u32(const U32& s) {
  if (s.find(U'&') == U32::npos) return s;
  const auto& html5 = html5_entities();
  U32 out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != U'&') {
      out.push_back(s[i++]);
      continue;
    }
    size_t j = i + 1;
    if (j < s.size() && s[j] == U'#') {
      // &#[0-9]+;?  or  &#[xX][0-9a-fA-F]+;?
      size_t k = j + 1;
      bool hex = k < s.size() && (s[k] == U'x' || s[k] == U'X');
      size_t digits_begin = hex ? k + 1 : k, d = digits_begin;
      while (d < s.size() && (hex ? is_ascii_hex(s[d]) : is_ascii_digit(s[d]))) ++d;
      if (d == digits_begin) {  // no digits: "&" is literal
        out.push_back(s[i++]);
        continue;
      }
      uint64_t num = 0;
      for (size_t q = digits_begin; q < d; ++q) {
        uint32_t v = is_ascii_digit(s[q]) ? uint32_t(s[q] - '0') : uint32_t((s[q] | 0x20) - 'a' + 10);
        num = std::min<uint64_t>(num * (hex ? 16 : 10) + v, 0x110000);  // anything larger reads as invalid
      }
      if (d < s.size() && s[d] == U';') ++d;
      out += numeric_charref(num);
      i = d;
      continue;
    }
    // Named: [^\t\n\f <&#;]{1,32};?
    size_t k = j;
    while (k < s.size() && k - j < 32) {
      char32_t c = s[k];
      if (c == U'\t' || c == U'\n' || c == U'\f' || c == U' ' || c == U'<' || c == U'&' || c == U'#' || c == U';')
        break;
      ++k;
    }
    if (k == j) {
      out.push_back(s[i++]);
      continue;
    }
    if (k < s.size() && s[k] == U';') ++k;
    const U32 name = s.substr(j, k - j);
    // Longest prefix that is an entity (the whole name first, then shorter, at least 2 characters).
    std::string ascii;
    for (char32_t c : name) {
      if (c >= 0x80) break;
      ascii.push_back(char(c));
    }
    bool done = false;
    if (ascii.size() == name.size()) {
      auto it = html5.find(ascii);
      if (it != html5.end()) {
        out += it->second;
        done = true;
      }
    }
    for (size_t x = std::min(name.size() - 1, ascii.size()); !done && x > 1; --x) {
      auto it = html5.find(ascii.substr(0, x));
      if (it != html5.end()) {
        out += it->second;
        out += name.substr(x);
        done = true;
      }
    }
    if (!done) {
      out.push_back(U'&');
      out += name;
    }
    i = k;
  }
  return out;
}

// ---- ftfy 6.1.1 (the subset described at the top) ----

// ftfy's entity table: "&name;" for the HTML5 names with a semicolon, plus upper-cased forms of the
// lower-case names where the upper-cased form is not itself an entity.
const std::unordered_map<std::string, U32>& ftfy_entities() {
  static const auto table = [] {
    std::unordered_map<std::string, U32> t;
    for (const auto& e : kHtml5Entities) {
      std::string name = e.name;
      if (name.empty() || name.back() != ';') continue;
      t["&" + name] = from_utf8(e.value);
    }
    for (const auto& e : kHtml5Entities) {
      std::string name = e.name;
      if (name.empty() || name.back() != ';') continue;
      std::string lower = name, upper = name;
      for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
      for (auto& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
      if (name != lower) continue;
      const std::string entity_upper = "&" + upper;
      U32 as_text = from_utf8(entity_upper);
      if (html_unescape_u32(as_text) == as_text) t[entity_upper] = icu_upper(from_utf8(e.value));
    }
    return t;
  }();
  return table;
}

// ftfy.fixes.unescape_html: &#?[0-9A-Za-z]{1,24}; replaced when it is a known entity or a complete
// numeric reference.
U32 ftfy_unescape_html(const U32& s) {
  const auto& entities = ftfy_entities();
  U32 out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == U'&') {
      size_t j = i + 1;
      if (j < s.size() && s[j] == U'#') ++j;
      size_t k = j;
      while (k < s.size() && is_ascii_alnum(s[k]) && k - j < 25) ++k;
      if (k > j && k - j <= 24 && k < s.size() && s[k] == U';') {
        const U32 match = s.substr(i, k + 1 - i);
        const std::string key = to_utf8(match);
        auto it = entities.find(key);
        if (it != entities.end()) {
          out += it->second;
          i = k + 1;
          continue;
        }
        if (s[i + 1] == U'#') {
          U32 unescaped = html_unescape_u32(match);
          out += unescaped.find(U';') != U32::npos ? match : unescaped;
          i = k + 1;
          continue;
        }
        out += match;
        i = k + 1;
        continue;
      }
    }
    out.push_back(s[i++]);
  }
  return out;
}

// Encodes `s` in a single-byte encoding; false when some character has no byte there.
bool encode_single_byte(const U32& s, const SingleByteCharmap& m, std::string* bytes) {
  static std::map<const SingleByteCharmap*, std::unordered_map<char32_t, unsigned char>> reverse_maps;
  static std::mutex mutex;
  const std::unordered_map<char32_t, unsigned char>* rev;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto& r = reverse_maps[&m];
    if (r.empty())
      for (int b = 0x80; b < 0x100; ++b) r.emplace(m.high[b - 0x80], (unsigned char)b);
    rev = &r;
  }
  bytes->clear();
  for (char32_t c : s) {
    if (c < 0x80 && !(m.sloppy && c == 0x1A)) {
      bytes->push_back(char(c));
    } else if (m.sloppy && c == 0xFFFD) {
      bytes->push_back('\x1A');  // the sloppy codecs' stand-in for the replacement character
    } else {
      auto it = rev->find(c);
      if (it == rev->end()) return false;
      bytes->push_back(char(it->second));
    }
  }
  return true;
}

bool is_c1(char32_t c) { return c >= 0x80 && c <= 0x9F; }

U32 fix_c1_controls(const U32& s) {
  const auto& cp1252 = charmap("sloppy-windows-1252");
  U32 out = s;
  for (auto& c : out)
    if (is_c1(c)) c = cp1252.high[c - 0x80];
  return out;
}

// One step of ftfy's fix_encoding.
U32 fix_encoding_one_step(const U32& s) {
  if (s.empty() || is_ascii(s)) return s;
  std::string bytes;
  bool latin1_possible = false;
  for (const auto& m : kCharmaps) {
    if (!encode_single_byte(s, m, &bytes)) continue;
    if (std::string(m.name) == "latin-1") latin1_possible = true;
    U32 fixed;
    if (decode_utf8(bytes, &fixed)) return fixed;
  }
  if (latin1_possible) {
    // Latin-1 text with C1 controls meant as windows-1252 (strict: the five undefined bytes fail).
    encode_single_byte(s, charmap("latin-1"), &bytes);
    const auto& cp1252 = charmap("sloppy-windows-1252");
    U32 fixed;
    bool ok = true;
    for (unsigned char b : bytes) {
      if (b == 0x81 || b == 0x8D || b == 0x8F || b == 0x90 || b == 0x9D) ok = false;
      fixed.push_back(b < 0x80 ? char32_t(b) : cp1252.high[b - 0x80]);
    }
    if (ok && fixed != s) return fixed;
  }
  if (std::any_of(s.begin(), s.end(), is_c1)) return fix_c1_controls(s);
  return s;
}

U32 fix_encoding(U32 s) {
  for (int guard = 0; guard < 100; ++guard) {
    U32 next = fix_encoding_one_step(s);
    if (next == s) break;
    s = std::move(next);
  }
  return s;
}

U32 fix_latin_ligatures(const U32& s) {
  static const std::unordered_map<char32_t, U32> ligatures = {
      {U'\u0132', U"IJ"},      {U'\u0133', U"ij"}, {U'\u0149', U"\u02BCn"}, {U'\u01F1', U"DZ"},
      {U'\u01F2', U"Dz"},      {U'\u01F3', U"dz"}, {U'\u01C4', U"D\u017D"}, {U'\u01C5', U"D\u017E"},
      {U'\u01C6', U"d\u017E"}, {U'\u01C7', U"LJ"}, {U'\u01C8', U"Lj"},      {U'\u01C9', U"lj"},
      {U'\u01CA', U"NJ"},      {U'\u01CB', U"Nj"}, {U'\u01CC', U"nj"},      {U'\uFB00', U"ff"},
      {U'\uFB01', U"fi"},      {U'\uFB02', U"fl"}, {U'\uFB03', U"ffi"},     {U'\uFB04', U"ffl"},
      {U'\uFB05', U"\u017Ft"}, {U'\uFB06', U"st"}};
  U32 out;
  for (char32_t c : s) {
    auto it = ligatures.find(c);
    if (it != ligatures.end())
      out += it->second;
    else
      out.push_back(c);
  }
  return out;
}

// U+3000 -> space; U+FF01..U+FFEF -> their NFKC form where it differs.
U32 fix_character_width(const U32& s) {
  static const auto width_map = [] {
    std::unordered_map<char32_t, U32> m = {{U'\u3000', U" "}};
    for (char32_t c = 0xFF01; c < 0xFFF0; ++c) {
      U32 one(1, c);
      U32 alt = normalize(one, true);
      if (alt != one) m[c] = alt;
    }
    return m;
  }();
  U32 out;
  for (char32_t c : s) {
    auto it = width_map.find(c);
    if (it != width_map.end())
      out += it->second;
    else
      out.push_back(c);
  }
  return out;
}

U32 uncurl_quotes(U32 s) {
  for (auto& c : s) {
    if (c == 0x2BC || (c >= 0x2018 && c <= 0x201B))
      c = U'\'';
    else if (c >= 0x201C && c <= 0x201F)
      c = U'"';
  }
  return s;
}

U32 fix_line_breaks(const U32& s) {
  U32 out;
  for (size_t i = 0; i < s.size(); ++i) {
    char32_t c = s[i];
    if (c == U'\r' && i + 1 < s.size() && s[i + 1] == U'\n') continue;  // CRLF -> LF (the LF follows)
    if (c == U'\r' || c == 0x2028 || c == 0x2029 || c == 0x85) c = U'\n';
    out.push_back(c);
  }
  return out;
}

// ESC [ (digits | ;)* letter
U32 remove_terminal_escapes(const U32& s) {
  U32 out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == 0x1B && i + 1 < s.size() && s[i + 1] == U'[') {
      size_t k = i + 2;
      while (k < s.size() && (s[k] == U';' || u_charType(UChar32(s[k])) == U_DECIMAL_DIGIT_NUMBER)) ++k;
      if (k < s.size() && ((s[k] >= U'a' && s[k] <= U'z') || (s[k] >= U'A' && s[k] <= U'Z'))) {
        i = k + 1;
        continue;
      }
    }
    out.push_back(s[i++]);
  }
  return out;
}

U32 remove_control_chars(const U32& s) {
  U32 out;
  for (char32_t c : s) {
    const bool drop = c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || (c >= 0x206A && c <= 0x206F) ||
                      c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC);
    if (!drop) out.push_back(c);
  }
  return out;
}

U32 fix_segment(U32 text, bool unescape_html) {
  for (int guard = 0; guard < 100; ++guard) {
    const U32 orig = text;
    if (unescape_html) text = ftfy_unescape_html(text);
    text = fix_encoding(text);
    text = fix_c1_controls(text);
    text = fix_latin_ligatures(text);
    text = fix_character_width(text);
    text = uncurl_quotes(text);
    text = fix_line_breaks(text);
    text = remove_terminal_escapes(text);
    text = remove_control_chars(text);
    text = normalize(text, false);
    if (text == orig) break;
  }
  return text;
}

U32 ftfy_fix_text_u32(const U32& text) {
  U32 out;
  bool unescape_html = true;  // "auto": switched off for good once a segment contains '<'
  size_t pos = 0;
  while (pos < text.size()) {
    size_t brk = text.find(U'\n', pos);
    brk = brk == U32::npos ? text.size() : brk + 1;
    brk = std::min(brk, pos + 1000000);  // ftfy's max_decode_length
    U32 segment = text.substr(pos, brk - pos);
    if (segment.find(U'<') != U32::npos) unescape_html = false;
    out += fix_segment(segment, unescape_html);
    pos = brk;
  }
  return out;
}

U32 clean_lower_u32(const U32& text) {
  U32 t = ftfy_fix_text_u32(text);
  t = py_strip(html_unescape_u32(html_unescape_u32(t)));  // basic_clean
  U32 collapsed;                                          // whitespace_clean: \s+ -> " ", strip
  for (size_t i = 0; i < t.size();) {
    if (u_hasBinaryProperty(UChar32(t[i]), UCHAR_WHITE_SPACE)) {
      while (i < t.size() && u_hasBinaryProperty(UChar32(t[i]), UCHAR_WHITE_SPACE)) ++i;
      collapsed.push_back(U' ');
    } else {
      collapsed.push_back(t[i++]);
    }
  }
  return icu_lower(py_strip(collapsed));
}

// The official split pattern: special tokens, contractions, letter runs, single digits, runs of
// other non-space characters; case-insensitive.
const icu::RegexPattern& split_pattern() {
  static const std::unique_ptr<icu::RegexPattern> pattern = [] {
    UErrorCode st = U_ZERO_ERROR;
    UParseError pe;
    icu::UnicodeString p = icu::UnicodeString::fromUTF8(
        "<start_of_text>|<end_of_text>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\p{White_Space}\\p{L}\\p{N}]+");
    std::unique_ptr<icu::RegexPattern> r(icu::RegexPattern::compile(p, UREGEX_CASE_INSENSITIVE, pe, st));
    SEGMUX_CHECK(U_SUCCESS(st), "tokenizer: ICU regex compile failed: ", u_errorName(st));
    return r;
  }();
  return *pattern;
}

// bytes_to_unicode: printable bytes map to themselves, the others to U+0100 + n, in byte order.
std::vector<std::pair<int, char32_t>> bytes_to_unicode() {
  std::vector<std::pair<int, char32_t>> table;
  std::set<int> direct;
  for (int b = '!'; b <= '~'; ++b) direct.insert(b);
  for (int b = 0xA1; b <= 0xAC; ++b) direct.insert(b);
  for (int b = 0xAE; b <= 0xFF; ++b) direct.insert(b);
  for (int b : direct) table.emplace_back(b, char32_t(b));
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (!direct.count(b)) table.emplace_back(b, char32_t(256 + n++));
  return table;
}

const char* const kVocabularyFile = "bpe_simple_vocab_16e6.txt.gz";

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A path given as the vocabulary itself (rather than a checkpoint next to it).
bool named_like_vocabulary(const std::string& path) {
  const std::string base = path.substr(path.find_last_of('/') + 1);
  return has_suffix(base, ".gz") || has_suffix(base, ".txt") || base.find("vocab") != std::string::npos;
}

// Opens a regular file without blocking (a FIFO must not hang the load); -1 with errno on failure.
int open_regular(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

// The first bytes of a regular file, or an error saying why they cannot be read.
std::string file_head(const std::string& path, size_t n) {
  const int fd = open_regular(path);
  SEGMUX_CHECK(fd >= 0, "cannot read tokenizer vocabulary '", printable(path),
               "': ", errno == EINVAL ? "not a regular file" : std::strerror(errno));
  std::string head(n, '\0');
  const ssize_t got = ::pread(fd, head.data(), n, 0);
  const int err = errno;
  ::close(fd);
  SEGMUX_CHECK(got >= 0, "cannot read tokenizer vocabulary '", printable(path), "': ", std::strerror(err));
  head.resize(size_t(got));
  return head;
}

bool is_gzip(const std::string& head) { return head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b'; }

std::string kind_of(const std::string& head) {
  return describe_file_kind(reinterpret_cast<const std::byte*>(head.data()), head.size());
}

std::string read_gzip(const std::string& path) {
  const std::string name = printable(path);
  const std::string head = file_head(path, 16);
  SEGMUX_CHECK(is_gzip(head), "tokenizer vocabulary '", name, "' is not gzip-compressed (it is ", kind_of(head),
               "); expected the published bpe_simple_vocab_16e6.txt.gz");
  const int fd = open_regular(path);
  SEGMUX_CHECK(fd >= 0, "cannot read tokenizer vocabulary '", name, "': ", std::strerror(errno));
  gzFile f = gzdopen(fd, "rb");
  if (f == nullptr) {
    ::close(fd);
    fail("cannot read tokenizer vocabulary '", name, "': out of memory");
  }
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    out.append(buf, size_t(n));
    if (out.size() > (size_t(64) << 20)) {
      gzclose(f);
      fail("tokenizer vocabulary '", name, "' inflates to more than 64 MiB (the real one is 1.3 MiB)");
    }
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string message = msg ? msg : "";
  gzclose(f);
  SEGMUX_CHECK(n == 0 && err == Z_OK, "cannot read tokenizer vocabulary '", name, "': damaged gzip data (",
               printable(message), ")");
  return out;
}

}  // namespace

std::string html_unescape(const std::string& text) { return to_utf8(html_unescape_u32(from_utf8(text))); }
std::string ftfy_fix_text(const std::string& text) { return to_utf8(ftfy_fix_text_u32(from_utf8(text))); }
std::string clean_text_lower(const std::string& text) { return to_utf8(clean_lower_u32(from_utf8(text))); }

std::string Tokenizer::find_vocabulary(const std::string& path) {
  const std::string name = printable(path);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  std::string not_a_vocabulary;  // why `path` itself was not taken, for the final message
  if (exists && !S_ISDIR(st.st_mode)) {
    // The vocabulary itself (gzip magic), or a file (e.g. the checkpoint) whose folder holds it. A
    // file named like a vocabulary that cannot serve as one is reported as such, not as "not found".
    SEGMUX_CHECK(S_ISREG(st.st_mode) || !named_like_vocabulary(path), "tokenizer vocabulary '", name,
                 "' is not a regular file");
    if (!named_like_vocabulary(path)) {
      const int fd = open_regular(path);
      if (fd >= 0) {
        char magic[2] = {0, 0};
        const bool gz = ::pread(fd, magic, 2, 0) == 2 && is_gzip(std::string(magic, 2));
        ::close(fd);
        if (gz) return path;
      }
      not_a_vocabulary = " ('" + name + "' is not a gzip vocabulary, so its folder was searched)";
    } else {
      const std::string head = file_head(path, 16);
      SEGMUX_CHECK(is_gzip(head), "tokenizer vocabulary '", name, "' is not gzip-compressed (it is ", kind_of(head),
                   "); expected the published ", kVocabularyFile);
      return path;
    }
  }
  std::string dir = path;
  if (!exists || !S_ISDIR(st.st_mode)) {
    auto slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  const std::string candidates[] = {dir + "/" + kVocabularyFile, dir + "/tokenizer/" + kVocabularyFile};
  for (auto& c : candidates) {
    struct stat cst {};
    if (::stat(c.c_str(), &cst) == 0) {
      SEGMUX_CHECK(S_ISREG(cst.st_mode), "tokenizer vocabulary '", printable(c), "' exists but is not a regular file");
      return c;
    }
    SEGMUX_CHECK(errno == ENOENT || errno == ENOTDIR, "cannot access tokenizer vocabulary '", printable(c),
                 "': ", std::strerror(errno));
  }
  fail("tokenizer vocabulary ", kVocabularyFile, " not found: looked for '", name, "' as the file, then '",
       printable(candidates[0]), "' and '", printable(candidates[1]), "'", not_a_vocabulary);
}

Tokenizer Tokenizer::load(const std::string& path, int context_length) {
  SEGMUX_CHECK(context_length >= 2, "tokenizer: context length ", context_length, " leaves no room for SOT and EOT");
  SEGMUX_CHECK(context_length <= kMaxTextContextLength, "tokenizer: context length ", context_length,
               " is more than the limit of ", kMaxTextContextLength);
  const std::string file = find_vocabulary(path);
  return guard_allocation("tokenizer vocabulary '" + file + "'",
                          [&] { return from_merges_text(read_gzip(file), context_length, file); });
}

Tokenizer Tokenizer::from_merges_text(const std::string& text, int context_length, const std::string& file) {
  SEGMUX_CHECK(context_length >= 2, "tokenizer: context length ", context_length, " leaves no room for SOT and EOT");
  SEGMUX_CHECK(context_length <= kMaxTextContextLength, "tokenizer: context length ", context_length,
               " is more than the limit of ", kMaxTextContextLength);
  U32 check;
  SEGMUX_CHECK(decode_utf8(text, &check), "tokenizer vocabulary '", printable(file),
               "' is not valid UTF-8 text (damaged, or not a BPE merges file)");

  Tokenizer t;
  t.context_length_ = context_length;
  std::vector<std::string> lines;
  for (size_t pos = 0;;) {
    size_t nl = text.find('\n', pos);
    lines.push_back(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  // The official slice: lines[1 : 49152 - 256 - 2 + 1].
  const size_t first = 1, last = std::min(lines.size(), size_t(49152 - 256 - 2 + 1));
  SEGMUX_CHECK(lines.size() > first, "tokenizer vocabulary '", printable(file),
               "' has no merges (a header line, then one 'a b' merge per line, was expected)");

  std::vector<std::string> vocab;
  const auto b2u = bytes_to_unicode();
  for (auto& [b, c] : b2u) {
    std::string sym;
    append_utf8(sym, c);
    t.byte_to_symbol_[b] = sym;
    vocab.push_back(sym);
  }
  for (size_t i = 0; i < 256; ++i) vocab.push_back(vocab[i] + "</w>");
  for (size_t i = first; i < last; ++i) {
    // merge.split(): whitespace-separated parts (two for every real merge line).
    std::vector<std::string> parts;
    const std::string& line = lines[i];
    for (size_t p = 0; p < line.size();) {
      while (p < line.size() && std::isspace(static_cast<unsigned char>(line[p]))) ++p;
      size_t q = p;
      while (q < line.size() && !std::isspace(static_cast<unsigned char>(line[q]))) ++q;
      if (q > p) parts.push_back(line.substr(p, q - p));
      p = q;
    }
    std::string joined;
    for (auto& part : parts) joined += part;
    vocab.push_back(joined);
    if (parts.size() == 2) t.merge_rank_[parts[0] + " " + parts[1]] = int(i - first);
  }
  vocab.push_back("<start_of_text>");
  vocab.push_back("<end_of_text>");
  t.id_to_token_ = vocab;
  for (size_t i = 0; i < vocab.size(); ++i) t.token_to_id_[vocab[i]] = int64_t(i);
  t.sot_id_ = t.token_to_id_.at("<start_of_text>");
  t.eot_id_ = t.token_to_id_.at("<end_of_text>");
  t.cache_->entries["<start_of_text>"] = "<start_of_text>";
  t.cache_->entries["<end_of_text>"] = "<end_of_text>";
  return t;
}

std::string Tokenizer::bpe(const std::string& token) const {
  {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto it = cache_->entries.find(token);
    if (it != cache_->entries.end()) return it->second;
  }
  const U32 chars = from_utf8(token);
  SEGMUX_CHECK(!chars.empty(), "tokenizer: empty token");
  std::string out = bpe_merge(chars);
  // Long words are rare and would let one hostile prompt fill the cache: not kept.
  if (token.size() > kMaxCachedTokenBytes) return out;
  std::lock_guard<std::mutex> lock(cache_->mutex);
  cache_->entries.emplace(token, out);
  return out;
}

// The official loop merges, while any adjacent pair is in the merges table, every occurrence of the
// lowest-ranked pair, left to right. Rescanning the word per merge made that quadratic (a 100k-letter
// word took 15 s); here a heap holds each pair as it forms, a linked list the symbols: O(n log n), same
// result for any merges table (each round takes every pair of one rank, left to right, as the official
// scan does, before pairs that the round creates are considered).
std::string Tokenizer::bpe_merge(const U32& chars) const {
  struct Symbol {
    std::string text;
    int next;  // index of the following live symbol, -1 at the end
    int prev;
    bool alive = true;
  };
  const int n = int(chars.size());
  std::vector<Symbol> word(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    append_utf8(word[size_t(i)].text, chars[size_t(i)]);
    word[size_t(i)].next = i + 1 < n ? i + 1 : -1;
    word[size_t(i)].prev = i - 1;
  }
  word.back().text += "</w>";
  using Pair = std::pair<int, int>;  // (rank, index of the left symbol): the smallest rank, then leftmost
  std::priority_queue<Pair, std::vector<Pair>, std::greater<>> pairs;
  auto rank_at = [&](int left) {
    const int right = word[size_t(left)].next;
    if (right < 0) return INT_MAX;
    auto it = merge_rank_.find(word[size_t(left)].text + " " + word[size_t(right)].text);
    return it == merge_rank_.end() ? INT_MAX : it->second;
  };
  auto push = [&](int left) {
    if (left < 0) return;
    const int r = rank_at(left);
    if (r != INT_MAX) pairs.push({r, left});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<int> lefts;
  while (!pairs.empty()) {
    // One official step: every pair of the lowest rank, left to right (equal ranks pop by position).
    const int rank = pairs.top().first;
    lefts.clear();
    for (; !pairs.empty() && pairs.top().first == rank; pairs.pop()) lefts.push_back(pairs.top().second);
    for (int left : lefts) {
      // Stale entries (a symbol merged away or grown since the pair formed) no longer have this rank.
      if (!word[size_t(left)].alive || rank_at(left) != rank) continue;
      Symbol& a = word[size_t(left)];
      Symbol& b = word[size_t(a.next)];
      a.text += b.text;
      b.alive = false;
      a.next = b.next;
      if (b.next >= 0) word[size_t(b.next)].prev = left;
      push(a.prev);  // new pairs never have this rank again (the merged symbol is longer than either part)
      push(left);
    }
  }
  std::string out;
  for (int i = 0; i >= 0; i = word[size_t(i)].next) out += (out.empty() ? "" : " ") + word[size_t(i)].text;
  return out;
}

std::vector<int64_t> Tokenizer::encode(const std::string& text) const { return encode_prefix(text, SIZE_MAX); }

std::vector<int64_t> Tokenizer::encode_prefix(const std::string& text, size_t max_ids) const {
  const U32 cleaned = clean_lower_u32(from_utf8(text));
  std::vector<int64_t> ids;
  UErrorCode st = U_ZERO_ERROR;
  const icu::UnicodeString u = to_icu(cleaned);
  std::unique_ptr<icu::RegexMatcher> m(split_pattern().matcher(u, st));
  SEGMUX_CHECK(U_SUCCESS(st), "tokenizer: ICU matcher failed: ", u_errorName(st));
  while (ids.size() < max_ids && m->find()) {
    std::string piece;
    m->group(st).toUTF8String(piece);
    SEGMUX_CHECK(U_SUCCESS(st), "tokenizer: ICU match failed: ", u_errorName(st));
    std::string mapped;
    for (unsigned char b : piece) mapped += byte_to_symbol_[b];
    const std::string symbols = bpe(mapped);
    for (size_t p = 0; p <= symbols.size();) {
      size_t q = symbols.find(' ', p);
      if (q == std::string::npos) q = symbols.size();
      const std::string sym = symbols.substr(p, q - p);
      auto it = token_to_id_.find(sym);
      SEGMUX_CHECK(it != token_to_id_.end(), "tokenizer: BPE symbol '", sym, "' is not in the vocabulary");
      ids.push_back(it->second);
      p = q + 1;
    }
  }
  if (ids.size() > max_ids) ids.resize(max_ids);
  return ids;
}

std::vector<int64_t> Tokenizer::tokenize_one(const std::string& text) const {
  // Only the first context_length - 2 ids can reach the output (SOT before them, EOT forced last):
  // the text after them is not split or merged at all (a 500k-letter prompt held the model 106 s).
  std::vector<int64_t> tokens = {sot_id_};
  for (int64_t id : encode_prefix(text, size_t(std::max(context_length_ - 2, 0)))) tokens.push_back(id);
  tokens.push_back(eot_id_);
  if (tokens.size() > size_t(context_length_)) {  // truncate; the last id is forced to EOT
    tokens.resize(size_t(context_length_));
    tokens.back() = eot_id_;
  }
  tokens.resize(size_t(context_length_), 0);
  return tokens;
}

Tensor Tokenizer::tokenize(const std::vector<std::string>& texts) const {
  Tensor out(DType::i64, {int64_t(texts.size()), context_length_});
  int64_t* p = out.data<int64_t>();
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tokenize_one(texts[i]);
    std::copy(ids.begin(), ids.end(), p + i * size_t(context_length_));
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  std::unordered_map<char32_t, unsigned char> byte_of;
  for (int b = 0; b < 256; ++b) byte_of[from_utf8(byte_to_symbol_[b])[0]] = (unsigned char)b;
  std::string bytes;
  for (int64_t id : ids) {
    SEGMUX_CHECK(id >= 0 && id < vocab_size(), "tokenizer: id ", id, " is outside the vocabulary");
    for (char32_t c : from_utf8(id_to_token_[size_t(id)])) {
      auto it = byte_of.find(c);
      SEGMUX_CHECK(it != byte_of.end(), "tokenizer: token ", id, " has a character outside the byte map");
      bytes.push_back(char(it->second));
    }
  }
  // Invalid UTF-8 reads as U+FFFD (errors="replace"), then "</w>" marks word ends.
  std::string text;
  for (size_t i = 0; i < bytes.size();) {
    size_t len = 1;
    unsigned char c = (unsigned char)bytes[i];
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4;
    U32 one;
    if (i + len <= bytes.size() && decode_utf8(bytes.substr(i, len), &one)) {
      text += bytes.substr(i, len);
      i += len;
    } else {
      text += "\xEF\xBF\xBD";
      ++i;
    }
  }
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 4, "</w>") == 0) {
      out += ' ';
      i += 4;
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace segmux::sam31
