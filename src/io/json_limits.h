// The one place JSON from untrusted files is parsed (safetensors headers, config files, model.json,
// .smx metadata): the text size, the nesting depth and the number of values are bounded, the depth and
// the count while parsing (before a deeper or bigger tree exists), so nothing later (dump, compare, copy,
// all recursive) can exhaust the stack or the memory. Parsing is linear in the text; an object with the
// same key twice is refused (which one would count is ambiguous).
// Syntax errors, invalid UTF-8 included, become a segmux::Error naming the source, in valid UTF-8.
//
//   nlohmann::json j = parse_untrusted_json(text, "model.json");              // text in memory
//   nlohmann::json j = read_untrusted_json_file(dir + "/model.json");         // a file (regular only)
//   nlohmann::ordered_json m = parse_untrusted_ordered_json(text, what, {.max_depth = 16});
//   fail(what, ": 'threads' must be an integer, got ", describe_json(j["threads"]));
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace segmux {

struct JsonLimits {
  size_t max_depth = 64;                // arrays/objects inside each other; the top value is depth 1
  size_t max_bytes = size_t(64) << 20;  // text size
  size_t max_values = size_t(1) << 20;  // values of any kind, containers included, counted while parsing
};

nlohmann::json parse_untrusted_json(std::string_view text, const std::string& what, const JsonLimits& limits = {});
nlohmann::ordered_json parse_untrusted_ordered_json(std::string_view text, const std::string& what,
                                                    const JsonLimits& limits = {});

// CBOR (binary JSON, e.g. the .smx sections) with the same bounds: its nesting is checked by a
// streaming pass before the (recursive) DOM parser runs. Errors name `what`.
nlohmann::json parse_untrusted_cbor(const void* data, size_t nbytes, const std::string& what,
                                    const JsonLimits& limits = {});

// Reads a whole file: a regular file (not a pipe, device or folder), at most `max_bytes`, checked
// before reading. Errors name the path and say why (missing, not regular, unreadable, too large).
std::string read_untrusted_text_file(const std::string& path, size_t max_bytes);
nlohmann::json read_untrusted_json_file(const std::string& path, const JsonLimits& limits = {});
nlohmann::ordered_json read_untrusted_ordered_json_file(const std::string& path, const JsonLimits& limits = {});

// A short, non-recursive description of a value for messages: "the string \"abc\"", "the number 3",
// "an array of 2 elements", "an object of 5 entries", "null", "true". Long strings are cut.
std::string describe_json(const nlohmann::json& v);
std::string describe_json(const nlohmann::ordered_json& v);

}  // namespace segmux
