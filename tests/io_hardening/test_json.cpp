// Hostile JSON: deep nesting is refused while parsing (before anything serializes it recursively),
// sizes are bounded, wrong-typed config fields name the field and the file, and messages stay UTF-8.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <time.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "hardening_util.h"
#include "io/json_limits.h"
#include "io/printable.h"
#include "io/safetensors.h"
#include "models/sam31/config.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::hardening;

namespace {

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A safetensors file with the given header text and no tensors.
std::string safetensors_with_header(const std::string& header) {
  uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header;
}

}  // namespace

TEST(JsonHardening, DepthIsBoundedWhileParsing) {
  expect_error([] { parse_untrusted_json(nested_arrays(1000000), "deep.json"); },
               {"deep.json", "nested deeper than 64"});
  std::string objects;
  for (int k = 0; k < 100000; ++k) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  expect_error([&] { parse_untrusted_ordered_json(objects, "deep.json"); }, {"nested deeper than 64"});
  // Exactly at the limit is fine; one deeper is not.
  EXPECT_EQ(parse_untrusted_json(nested_arrays(64), "ok.json").size(), 1u);
  expect_error([] { parse_untrusted_json(nested_arrays(65), "x.json"); }, {"nested deeper than 64"});
  expect_error([] { parse_untrusted_json(nested_arrays(5), "x.json", {.max_depth = 4}); }, {"deeper than 4"});
}

TEST(JsonHardening, CborDepthAndSyntaxAreCheckedBeforeTheTreeIsBuilt) {
  // CBOR: 0x81 = an array of one element; nested a million deep, then the innermost value 0.
  std::string deep(1000000, '\x81');
  deep += '\x00';
  expect_error([&] { parse_untrusted_cbor(deep.data(), deep.size(), "graph section"); },
               {"graph section", "nested deeper than 64"});
  const std::string ok = std::string(64, '\x81') + '\x00';
  EXPECT_EQ(parse_untrusted_cbor(ok.data(), ok.size(), "ok").size(), 1u);
  const std::string truncated = "\x82\x01";  // an array of two with one element
  expect_error([&] { parse_untrusted_cbor(truncated.data(), truncated.size(), "plan section"); },
               {"plan section", "not valid CBOR"});
  expect_error([&] { parse_untrusted_cbor(ok.data(), ok.size(), "big", {.max_bytes = 8}); }, {"big", "larger"});
}

TEST(JsonHardening, SizeSyntaxAndEncodingErrorsAreClear) {
  expect_error([] { parse_untrusted_json("[1,2,3]", "big.json", {.max_bytes = 4}); },
               {"big.json", "7 bytes is larger than the limit of 4"});
  const std::string msg = expect_error([] { parse_untrusted_json("{\"a\": \"\xff\xfe\"}", "utf.json"); },
                                       {"utf.json: not valid JSON", "UTF-8"});
  EXPECT_TRUE(is_valid_utf8(msg)) << msg;
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
  expect_error([] { parse_untrusted_json("{\"a\": ", "cut.json"); }, {"cut.json: not valid JSON"});
  EXPECT_EQ(describe_json(nlohmann::json::parse(R"([1,[2]])")), "an array of 2 elements");
  EXPECT_EQ(describe_json(nlohmann::json::parse(R"({"a":1})")), "an object of 1 entry");
  EXPECT_EQ(describe_json(nlohmann::json("x\x01y")), "the string \"x\\x01y\"");
  EXPECT_EQ(describe_json(nlohmann::json(2.5)), "the number 2.5");
}

TEST(JsonHardening, FilesMustBeRegularAndSmall) {
  const std::string fifo = temp_path("pipe.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  expect_error([&] { read_untrusted_json_file(fifo); }, {fifo, "is not a regular file"});  // no hang
  expect_error([] { read_untrusted_json_file("/"); }, {"'/' is not a regular file"});
  expect_error([] { read_untrusted_json_file("/nonexistent/model.json"); },
               {"cannot open '/nonexistent/model.json': No such file"});
  const std::string big = write_temp("big.json", "[" + std::string(100, ' ') + "]");
  expect_error([&] { read_untrusted_json_file(big, {.max_bytes = 50}); }, {big, "102 bytes, larger than the limit"});
  const std::string ok = write_temp("ok.json", R"({"a": [1, 2]})");
  EXPECT_EQ(read_untrusted_ordered_json_file(ok)["a"][1], 2);
}

TEST(JsonHardening, SafetensorsMetadataNestingIsRefused) {
  // Before the fix the header parsed, then __metadata__'s value was serialized recursively: SIGSEGV.
  const std::string path = write_temp(
      "deep_meta.safetensors", safetensors_with_header(R"({"__metadata__": {"x": )" + nested_arrays(300000) + "}}"));
  expect_error([&] { read_safetensors(path); }, {path, "nested deeper than 16"});
  // Shallow non-string metadata is still kept as its JSON text.
  const std::string shallow =
      write_temp("meta.safetensors", safetensors_with_header(R"({"__metadata__": {"x": [1, {"y": 2}]}})"));
  EXPECT_EQ(read_safetensors(shallow).metadata.at("x"), R"([1,{"y":2}])");
}

TEST(JsonHardening, ConfigFieldsOfTheWrongTypeNameFieldAndFile) {
  // Before the fix the wrong-typed value was dumped into the message recursively: SIGSEGV.
  const std::string deep = write_temp("deep_config.json", R"({"image_size": )" + nested_arrays(300000) + "}");
  expect_error([&] { sam31::load_config(deep); }, {deep, "nested deeper than"});
  const std::string wrong = write_temp("wrong_config.json", R"({"image_size": [[1], [2]]})");
  expect_error([&] { sam31::load_config(wrong); },
               {wrong, "field 'image_size' must be an integer, got an array of 2 elements"});
  expect_error([] { sam31::parse_config(R"({"vit_global": {"a": 1}})", "cfg.json"); },
               {"cfg.json: field 'vit_global' must be a list of integers, got an object of 1 entry"});
  expect_error([] { sam31::parse_config(R"({"vit_global": [1, "2"]})", "cfg.json"); },
               {"cfg.json: field 'vit_global' must be an integer, got the string \"2\""});
  expect_error([] { sam31::parse_config(R"({"name": 7})", "cfg.json"); },
               {"cfg.json: field 'name' must be a string, got the number 7"});
  expect_error([] { sam31::parse_config(R"({"image_size": 18446744073709551615})", "cfg.json"); },
               {"cfg.json: field 'image_size' is out of range: 18446744073709551615"});
  expect_error([] { segmux::verify::parse_fixture_config(R"({"reduced_vs_official": [1]})", "cfg.json"); },
               {"cfg.json: 'reduced_vs_official' must be an object, got an array of 1 element"});
  // Consistency errors name the file as well.
  expect_error([] { sam31::parse_config(R"({"vit_heads": 10})", "cfg.json"); },
               {"cfg.json: config", "not divisible by vit_heads 10"});
  // A key with control characters is shown escaped.
  const std::string msg =
      expect_error([] { sam31::parse_config("{\"bad\\u0001key\": 1}", "cfg.json"); }, {"unknown config field"});
  EXPECT_NE(msg.find("bad\\x01key"), std::string::npos) << msg;
}

namespace {

// CPU seconds this thread has used: a bound on work that the machine's load does not change.
double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::string empty_objects(size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += i ? ",{}" : "{}";
  return s + "]";
}

}  // namespace

TEST(JsonHardening, ManyEmptyObjectsParseInLinearTime) {
  // Before the fix every closing '}' rescanned the enclosing array: 300,000 objects (900 KB) took ~15 s
  // of CPU (a 1.9 MB safetensors header 55 s); one pass takes ~0.05 s, so 3 s cannot flake.
  const std::string text = empty_objects(300000);
  const double t0 = thread_cpu_seconds();
  const nlohmann::json j = parse_untrusted_json(text, "objects.json");
  EXPECT_LT(thread_cpu_seconds() - t0, 3.0) << "quadratic parsing is back";
  ASSERT_EQ(j.size(), 300000u);
  EXPECT_TRUE(j[299999].is_object());
  const double t1 = thread_cpu_seconds();
  EXPECT_EQ(parse_untrusted_ordered_json(text, "objects.json").size(), 300000u);
  EXPECT_LT(thread_cpu_seconds() - t1, 3.0);
}

TEST(JsonHardening, ValueCountIsBoundedWhileParsing) {
  // The count applies as values arrive: a 6 MB array of 2 M empty objects stops at the limit.
  expect_error([] { parse_untrusted_json(empty_objects(2000000), "big.json"); },
               {"big.json", "JSON holds more than 1048576 values (the limit)"});
  // Containers count too: [1,[2,3]] is 5 values.
  expect_error([] { parse_untrusted_json("[1,[2,3]]", "x.json", {.max_values = 4}); }, {"more than 4 values"});
  EXPECT_EQ(parse_untrusted_json("[1,[2,3]]", "x.json", {.max_values = 5}).size(), 2u);
  // A safetensors header is bounded the same way.
  const std::string path = write_temp("many.safetensors", safetensors_with_header(empty_objects(1100000)));
  expect_error([&] { read_safetensors(path); }, {path, "more than 1048576 values"});
}

TEST(JsonHardening, DuplicateKeysAreRefused) {
  expect_error([] { parse_untrusted_json(R"({"a": 1, "b": {"a": 2}, "a": 3})", "dup.json"); },
               {"dup.json: JSON object has the key \"a\" twice"});
  expect_error([] { parse_untrusted_ordered_json(R"({"a": 1, "a": 1})", "dup.json"); }, {"key \"a\" twice"});
  // The same key in different objects is fine, and the tree is the one the text says.
  const auto j = parse_untrusted_ordered_json(R"({"z": {"a": 1}, "a": [true, null, "s", 2.5, -3]})", "ok.json");
  EXPECT_EQ(j.dump(), R"({"z":{"a":1},"a":[true,null,"s",2.5,-3]})");
  EXPECT_EQ(parse_untrusted_json(R"("text")", "s.json"), "text");
  EXPECT_EQ(parse_untrusted_json("18446744073709551615", "n.json").get<uint64_t>(), UINT64_MAX);
  expect_error([] { parse_untrusted_json("[1] [2]", "two.json"); }, {"two.json: not valid JSON"});
}

TEST(JsonHardening, SafetensorsDuplicateNamesAndOverlappingDataAreRefused) {
  const std::string tensor = R"({"dtype": "F32", "shape": [1], "data_offsets": )";
  auto file = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    return write_temp(name, safetensors_with_header(header) + std::string(data_bytes, '\0'));
  };
  const std::string dup = file("dup.safetensors", "{\"w\": " + tensor + "[0, 4]}, \"w\": " + tensor + "[4, 8]}}", 8);
  expect_error([&] { read_safetensors(dup); }, {dup, "(safetensors header)", "the key \"w\" twice"});
  const std::string overlap =
      file("overlap.safetensors", "{\"a\": " + tensor + "[0, 4]}, \"b\": " + tensor + "[2, 6]}}", 8);
  expect_error([&] { read_safetensors(overlap); }, {overlap, "tensors 'a' [0,4) and 'b' [2,6) overlap"});
  const std::string same = file("same.safetensors", "{\"a\": " + tensor + "[0, 4]}, \"b\": " + tensor + "[0, 4]}}", 4);
  expect_error([&] { read_safetensors(same); }, {same, "overlap in the data section"});
  // Adjacent tensors, an empty one anywhere, and gaps are fine; names come in data order.
  const std::string ok =
      file("ok.safetensors",
           "{\"b\": " + tensor + "[4, 8]}, \"a\": " + tensor + "[0, 4]}, \"e\": " +
               R"({"dtype": "F32", "shape": [0], "data_offsets": [2, 2]}, "c": )" + tensor + "[12, 16]}}",
           16);
  EXPECT_EQ(read_safetensors(ok).names, (std::vector<std::string>{"a", "e", "b", "c"}));
}

TEST(JsonHardening, SafetensorsSizesBeyond64BitsAreNamed) {
  // Before: the product did not fit an integer and the message said "needs 0 bytes".
  const std::string huge =
      write_temp("huge.safetensors",
                 safetensors_with_header(
                     R"({"w": {"dtype": "F32", "shape": [1099511627775, 1099511627775], "data_offsets": [0, 4]}})") +
                     std::string(4, '\0'));
  expect_error([&] { read_safetensors(huge); }, {"needs more than 18446744073709551615 bytes but has 4"});
}
