// Hostile .smx files and files that are not .smx at all: bounded metadata, and a clear "not a segmux
// offline model (.smx)" instead of whatever the ONNX reader would say.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "compiler/compile.h"
#include "ir/builder.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

using namespace segmux;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

std::string tiny_smx() {
  ir::Graph g;
  g.name = "tiny";
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 4});
  Tensor w(DType::f32, {4, 4});
  b.output(b.op1("MatMul", {x, b.constant(w, "w")}), "y");
  auto c = compiler::compile_graph(g);
  return segmux::serialize_offline_model(c.graph, c.plan, {});
}

template <typename T>
T get(const std::string& s, size_t off) {
  T v;
  std::memcpy(&v, s.data() + off, sizeof(T));
  return v;
}
template <typename T>
void put(std::string& s, size_t off, T v) {
  std::memcpy(s.data() + off, &v, sizeof(T));
}

// The same file with another META section: sections re-laid out (META, graph, plan 64-aligned; weights
// and prepacked 4096-aligned) and every checksum recomputed, so only the META content is hostile.
std::string with_meta(const std::string& smx, const std::string& meta) {
  const uint32_t count = get<uint32_t>(smx, 12);
  std::vector<std::string> sections;
  for (uint32_t i = 0; i < count; ++i)
    sections.push_back(smx.substr(get<uint64_t>(smx, 64 + i * 32 + 8), get<uint64_t>(smx, 64 + i * 32 + 16)));
  sections[0] = meta;
  std::string out = smx.substr(0, 64 + count * 32);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t align = i >= 3 ? 4096 : 64;
    out.resize((out.size() + align - 1) / align * align, '\0');
    const size_t e = 64 + i * 32;
    put<uint64_t>(out, e + 8, out.size());
    put<uint64_t>(out, e + 16, sections[i].size());
    put<uint64_t>(out, e + 24, XXH3_64bits(sections[i].data(), sections[i].size()));
    out += sections[i];
  }
  put<uint64_t>(out, 16, out.size());
  put<uint64_t>(out, 48, XXH3_64bits(out.data() + 64, count * 32));
  put<uint64_t>(out, 56, XXH3_64bits(out.data(), 56));
  return out;
}

segmux::OfflineModel load(const std::string& bytes) {
  auto st = Storage::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(st->data, bytes.data(), bytes.size());
  return segmux::load_offline_model(st, "hostile.smx");
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/segmux_hostile_" + std::to_string(::getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

TEST(OfflineModelHostile, MetaSectionDepthAndSizeAreBoundedBeforeParsing) {
  const std::string good = tiny_smx();
  ASSERT_NO_THROW(load(with_meta(good, R"({"target_isa": "generic", "x": [1, 2]})")));
  // 200,000 levels of arrays: accepted before (then `inspect --json` exhausted memory and the stack).
  const size_t depth = 200000;
  std::string deep = R"({"target_isa": "generic", "x": )" + std::string(depth, '[') + std::string(depth, ']') + "}";
  std::string e = error_of([&] { load(with_meta(good, deep)); });
  EXPECT_HAS(e, "hostile.smx meta section");
  EXPECT_HAS(e, "nested deeper");
  // Deep and unterminated: still the depth error, not a parse of the rest.
  e = error_of([&] { load(with_meta(good, std::string(depth, '['))); });
  EXPECT_HAS(e, "nested deeper");
  // Flat but huge.
  std::string big = R"({"target_isa": "generic", "x": ")" + std::string(size_t(2) << 20, 'a') + "\"}";
  e = error_of([&] { load(with_meta(good, big)); });
  EXPECT_HAS(e, "meta section is");
  EXPECT_HAS(e, "bytes, more than");
  // Not an object.
  EXPECT_HAS(error_of([&] { load(with_meta(good, "[1]")); }), "meta section is not a JSON object");
  // The writer refuses extra META it could not read back.
  segmux::WriteOptions w;
  w.meta_json = "{\"x\": " + std::string(100, '[') + std::string(100, ']') + "}";
  ir::Graph g;
  ir::GraphBuilder b(g);
  b.output(b.op1("Relu", {b.input("x", DType::f32, {2})}), "y");
  auto c = compiler::compile_graph(g);
  EXPECT_HAS(error_of([&] { segmux::serialize_offline_model(c.graph, c.plan, w); }), "nested deeper");
}

TEST(OfflineModelHostile, FilesThatAreNotSmxAreNamedSo) {
  const std::string empty_smx = temp_path("empty.smx"), empty_onnx = temp_path("empty.onnx");
  const std::string text_smx = temp_path("text.smx"), onnx_like = temp_path("model.onnx");
  const std::string renamed = temp_path("compiled.bin"), truncated = temp_path("truncated.onnx");
  write_file(empty_smx, "");
  write_file(empty_onnx, "");
  write_file(text_smx, "\x08\x07hello, not a compiled model");
  write_file(onnx_like, "\x08\x07\x12\x06segmux");
  const std::string smx = tiny_smx();
  write_file(renamed, smx);
  write_file(truncated, smx.substr(0, 5));

  std::string e = error_of([&] { segmux::detect_model_format(empty_smx); });
  EXPECT_HAS(e, empty_smx);
  EXPECT_HAS(e, "not a segmux offline model (.smx)");
  EXPECT_HAS(error_of([&] { segmux::detect_model_format(empty_onnx); }), "is empty");
  e = error_of([&] { segmux::detect_model_format(text_smx); });
  EXPECT_HAS(e, text_smx);
  EXPECT_HAS(e, "not a segmux offline model (.smx)");
  // By the bytes, not the name.
  EXPECT_EQ(segmux::detect_model_format(onnx_like), segmux::ModelFormat::onnx);
  EXPECT_EQ(segmux::detect_model_format(renamed), segmux::ModelFormat::smx);
  EXPECT_EQ(segmux::detect_model_format(truncated), segmux::ModelFormat::smx);
  EXPECT_HAS(error_of([&] { segmux::load_offline_model_file(truncated); }), "truncated");
  // The loader itself says the same for bytes that are not .smx.
  EXPECT_HAS(error_of([&] { segmux::load_offline_model_file(empty_smx); }), "not a segmux offline model (.smx)");
  EXPECT_HAS(error_of([&] { segmux::load_offline_model_file(text_smx); }), "not a segmux offline model (.smx)");
  // Not regular files: refused without blocking.
  const std::string fifo = temp_path("fifo.smx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_HAS(error_of([&] { segmux::detect_model_format(fifo); }), "not a regular file");
  EXPECT_FALSE(segmux::is_offline_model_file(fifo));
  EXPECT_HAS(error_of([&] { segmux::detect_model_format(::testing::TempDir()); }), "not a regular file");
  for (const auto& p : {empty_smx, empty_onnx, text_smx, onnx_like, renamed, truncated, fifo}) std::remove(p.c_str());
}
