// The offline model file: round trip equals Interpreter, weights alias the mapping, and every kind of
// damage (truncation, flipped bytes, wrong magic/version/ISA) is a clear Error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "io/safetensors.h"
#include "ir/builder.h"
#include "runtime/interpreter.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

using namespace segmux;
using ir::GraphBuilder;

namespace {

using test::random_tensor;

// A small transformer-ish block: projection, residual, softmax, a flatten through a shape chain.
ir::Graph small_model() {
  ir::Graph g;
  g.name = "small";
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 8, 16});
  int w1 = b.constant(random_tensor({16, 32}, 11), "w1");
  int b1 = b.constant(random_tensor({32}, 12), "b1");
  int w2 = b.constant(random_tensor({32, 16}, 13), "w2");
  int h = b.op1("Add", {b.op1("MatMul", {x, w1}), b1});
  h = b.op1("Relu", {h});
  h = b.op1("MatMul", {h, w2});
  int r = b.op1("Add", {x, h});
  int s = b.op1("Softmax", {r}, {{"axis", int64_t(-1)}});
  int shape = b.op1("Shape", {s});
  int d0 = b.op1("Gather", {shape, b.ints({0})}, {{"axis", int64_t(0)}});
  int flat = b.op1("Reshape", {s, b.op1("Concat", {d0, b.ints({-1})}, {{"axis", int64_t(0)}})});
  b.output(b.op1("Identity", {flat}), "probs");
  b.output(b.op1("Sigmoid", {r}), "gate");
  return g;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/segmux_" + std::to_string(::getpid()) + "_" + name;
}

std::shared_ptr<Storage> bytes_storage(const std::string& s) {
  auto st = Storage::allocate(s.size());
  if (!s.empty()) std::memcpy(st->data, s.data(), s.size());
  return st;
}

segmux::OfflineModel load_bytes(const std::string& s) {
  return segmux::load_offline_model(bytes_storage(s), "test bytes");
}

void expect_close(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    const Tensor& u = b.at(name);
    ASSERT_EQ(t.shape(), u.shape()) << name;
    ASSERT_EQ(t.dtype(), u.dtype()) << name;
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_NEAR(t.get_as_double(i), u.get_as_double(i), 1e-5) << name << "[" << i << "]";
  }
}

uint64_t read_u64(const std::string& s, size_t off) {
  uint64_t v;
  std::memcpy(&v, s.data() + off, 8);
  return v;
}

}  // namespace

TEST(OfflineModel, RoundTripMatchesSession) {
  ir::Graph g = small_model();
  std::map<std::string, Tensor> in{{"x", random_tensor({2, 8, 16}, 21)}};
  Interpreter session(g);
  auto expected = session.run(in);

  auto compiled = compiler::compile_graph(g);
  EXPECT_LT(compiled.graph.nodes.size(), g.nodes.size());  // the shape chain folded away
  std::string path = temp_path("roundtrip.smx");
  compiler::CompileOptions copt;
  compiler::write_compiled(path, compiled, copt);
  ASSERT_TRUE(segmux::is_offline_model_file(path));

  auto loaded = segmux::load_compiled(path);
  const auto& m = loaded.model;
  EXPECT_EQ(m.format_version, segmux::kOfflineFormatVersion);
  EXPECT_EQ(m.target_isa, segmux::host_isa());
  EXPECT_TRUE(std::regex_match(m.producer, std::regex("segmux [0-9]+\\.[0-9]+\\.[0-9]+"))) << m.producer;
  EXPECT_EQ(m.plan.arena_bytes, compiled.plan.arena_bytes);
  // Weights alias the file mapping: no copies, page-aligned section, 64-byte aligned tensors.
  for (auto& [id, t] : m.graph.initializers) {
    EXPECT_EQ(t.storage()->nbytes, m.file_bytes) << m.graph.value(id).name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
    EXPECT_TRUE(t.identical(*compiled.graph.initializer(id)));
  }
  auto got = loaded.executor->run(in);
  expect_close(expected, got);
  // The arena is reused: a second run with other inputs is right too, and earlier outputs stay valid.
  std::map<std::string, Tensor> in2{{"x", random_tensor({2, 8, 16}, 22)}};
  auto got2 = loaded.executor->run(in2);
  expect_close(session.run(in2), got2);
  expect_close(expected, got);
  std::remove(path.c_str());
}

TEST(OfflineModel, ExecutorMatchesSessionOnTheSameGraph) {
  auto compiled = compiler::compile_graph(small_model());
  std::map<std::string, Tensor> in{{"x", random_tensor({2, 8, 16}, 31)}};
  for (bool optimized : {false, true}) {
    Interpreter session(compiled.graph, InterpreterOptions{2, optimized});
    Executor exec(compiled.graph, compiled.plan, ExecutorOptions{2, optimized});
    auto a = session.run(in);
    auto b = exec.run(in);
    for (auto& [name, t] : a) EXPECT_TRUE(t.identical(b.at(name))) << name << (optimized ? " (optimized)" : "");
  }
}

TEST(OfflineModel, WrongInputsAreErrors) {
  auto compiled = compiler::compile_graph(small_model());
  Executor exec(compiled.graph, compiled.plan);
  EXPECT_THROW(exec.run({}), Error);
  EXPECT_THROW(exec.run({{"x", random_tensor({2, 8, 15}, 1)}}), Error);
  EXPECT_THROW(exec.run({{"x", Tensor(DType::i64, {2, 8, 16})}}), Error);
  EXPECT_THROW(exec.run({{"x", random_tensor({2, 8, 16}, 1)}, {"nope", random_tensor({1}, 1)}}), Error);
}

TEST(OfflineModel, TruncationAtEverySectionBoundaryIsAnError) {
  auto compiled = compiler::compile_graph(small_model());
  std::string bytes = segmux::serialize_offline_model(compiled.graph, compiled.plan, {});
  ASSERT_NO_THROW(load_bytes(bytes));
  uint32_t count;
  std::memcpy(&count, bytes.data() + 12, 4);
  std::vector<size_t> cuts = {0, 1, 7, 8, 63, 64, 64 + count * 32 - 1, 64 + count * 32};
  for (uint32_t i = 0; i < count; ++i) {
    size_t off = read_u64(bytes, 64 + i * 32 + 8), len = read_u64(bytes, 64 + i * 32 + 16);
    for (size_t c : {off - 1, off, off + 1, off + len / 2, off + len - 1, off + len}) cuts.push_back(c);
  }
  for (size_t c : cuts) {
    if (c >= bytes.size()) continue;
    EXPECT_THROW(load_bytes(bytes.substr(0, c)), Error) << "cut at " << c;
  }
  EXPECT_THROW(load_bytes(bytes + "x"), Error);  // trailing garbage
}

TEST(OfflineModel, EveryFlippedByteIsDetected) {
  auto compiled = compiler::compile_graph(small_model());
  std::string bytes = segmux::serialize_offline_model(compiled.graph, compiled.plan, {});
  // Every byte of the file (it is small): a flip anywhere must be a clean Error.
  for (size_t i = 0; i < bytes.size(); i += (i < 4096 ? 1 : 7)) {
    std::string bad = bytes;
    bad[i] = char(bad[i] ^ 0x20);
    try {
      load_bytes(bad);
      ADD_FAILURE() << "flip at byte " << i << " was not detected";
    } catch (const Error&) {
    }
  }
}

TEST(OfflineModel, WrongMagicVersionAndIsaAreClearErrors) {
  auto compiled = compiler::compile_graph(small_model());
  std::string bytes = segmux::serialize_offline_model(compiled.graph, compiled.plan, {});
  auto message = [](const std::string& b) -> std::string {
    try {
      load_bytes(b);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  std::string bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(message(bad).find("not a segmux offline model (.smx)"), std::string::npos) << message(bad);
  bad = bytes;
  uint32_t v = 99;
  std::memcpy(bad.data() + 8, &v, 4);
  uint64_t h = XXH3_64bits(bad.data(), 56);
  std::memcpy(bad.data() + 56, &h, 8);
  EXPECT_NE(message(bad).find("format version 99"), std::string::npos) << message(bad);

  segmux::WriteOptions w;
  w.target_isa = "imaginary-isa";
  std::string other = segmux::serialize_offline_model(compiled.graph, compiled.plan, w);
  EXPECT_NE(message(other).find("imaginary-isa"), std::string::npos) << message(other);
  segmux::LoadOptions lo;
  lo.check_isa = false;
  EXPECT_NO_THROW(segmux::load_offline_model(bytes_storage(other), "x", lo));
  EXPECT_TRUE(segmux::host_supports_isa("generic"));
  EXPECT_FALSE(segmux::host_supports_isa("imaginary-isa"));
  EXPECT_THROW(load_bytes(""), Error);
  EXPECT_THROW(segmux::load_offline_model_file(temp_path("missing.smx")), Error);
}

TEST(OfflineModel, PrepackedBlobsAreKeyedByIsa) {
  auto compiled = compiler::compile_graph(small_model());
  Tensor blob(DType::u8, {100});
  for (int i = 0; i < 100; ++i) blob.data<uint8_t>()[i] = uint8_t(i);
  segmux::WriteOptions w;
  w.prepacked_isa = segmux::host_isa();
  w.prepacked.push_back({0, {"matmul.b", blob}});
  auto m = load_bytes(segmux::serialize_offline_model(compiled.graph, compiled.plan, w));
  ASSERT_EQ(m.prepacked.size(), 1u);
  EXPECT_EQ(m.prepacked[0].key, "matmul.b");
  EXPECT_TRUE(m.prepacked[0].data.identical(blob));
  w.prepacked_isa = "some-other-isa";  // not this machine: ignored, kernels repack from the weights
  m = load_bytes(segmux::serialize_offline_model(compiled.graph, compiled.plan, w));
  EXPECT_EQ(m.prepacked_isa, "some-other-isa");
  EXPECT_TRUE(m.prepacked.empty());
}

namespace {

// Recomputes every checksum so a deliberately altered file reaches the parsers behind them.
void rechecksum(std::string& b) {
  uint32_t count;
  std::memcpy(&count, b.data() + 12, 4);
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = 64 + i * 32;
    uint64_t off = read_u64(b, e + 8), len = read_u64(b, e + 16);
    uint64_t h = XXH3_64bits(b.data() + off, len);
    std::memcpy(b.data() + e + 24, &h, 8);
  }
  uint64_t t = XXH3_64bits(b.data() + 64, count * 32);
  std::memcpy(b.data() + 48, &t, 8);
  uint64_t h = XXH3_64bits(b.data(), 56);
  std::memcpy(b.data() + 56, &h, 8);
}

std::string load_error(const std::string& b) {
  try {
    load_bytes(b);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OfflineModel, CraftedSectionsWithValidChecksumsAreErrors) {
  auto compiled = compiler::compile_graph(small_model());
  const std::string good = segmux::serialize_offline_model(compiled.graph, compiled.plan, {});
  size_t graph_off = read_u64(good, 64 + 32 + 8), graph_len = read_u64(good, 64 + 32 + 16);
  size_t plan_off = read_u64(good, 64 + 64 + 8), plan_len = read_u64(good, 64 + 64 + 16);

  std::string deep = good;  // arrays nested thousands deep must not exhaust the stack
  for (size_t i = 0; i < graph_len; ++i) deep[graph_off + i] = char(0x81);
  rechecksum(deep);
  EXPECT_NE(load_error(deep).find("nested deeper"), std::string::npos) << load_error(deep);

  std::string junk = good;
  for (size_t i = 0; i < plan_len; ++i) junk[plan_off + i] = char(0xff);
  rechecksum(junk);
  EXPECT_FALSE(load_error(junk).empty());

  std::string meta = good;  // META that is not a JSON object
  size_t meta_off = read_u64(good, 64 + 8);
  meta[meta_off] = '[';
  rechecksum(meta);
  EXPECT_FALSE(load_error(meta).empty());

  // Random byte changes behind valid checksums: always an Error, never a crash.
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = good;
    size_t lo = graph_off, hi = plan_off + plan_len;
    for (int k = 0; k < 1 + trial % 4; ++k) b[lo + rng() % (hi - lo)] = char(rng());
    rechecksum(b);
    try {
      load_bytes(b);
    } catch (const Error&) {
    }
  }
}
