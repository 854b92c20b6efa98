// The PyTorch checkpoint reader/writer and its pickle VM: the fixture .pt equals the fixture
// safetensors bit for bit, round trips, and hostile inputs are refused with a segmux::Error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "io/pickle.h"
#include "io/pytorch_zip.h"
#include "io/safetensors.h"
#include "models/sam31/weights.h"

using namespace segmux;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

// Temporary files of this test binary, removed when it exits.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (auto& p : paths) std::remove(p.c_str());
  }
};
TempFiles g_temp_files;

std::string temp_path(const std::string& name) {
  std::string p = ::testing::TempDir() + "segmux_sam31_io_" + std::to_string(::getpid()) + "_" + name;
  g_temp_files.paths.push_back(p);
  return p;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// Expects `fn` to throw a segmux::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

pickle::ValuePtr unpickle_plain(const std::string& bytes) {
  pickle::Hooks hooks;  // nothing allowed
  return pickle::unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), hooks, "test");
}

// A data.pkl holding {name: tensor(storage key '0' of `numel` elements, offset, size, stride)}.
std::string tensor_pickle(const std::string& name, const std::string& storage, int64_t numel, int64_t offset,
                          const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  pickle::Writer w;
  w.empty_dict();
  w.mark();
  w.string(name);
  w.global("torch._utils", "_rebuild_tensor_v2");
  w.mark();
  w.mark();
  w.string("storage");
  w.global("torch", storage);
  w.string("0");
  w.string("cpu");
  w.integer(numel);
  w.tuple_from_mark();
  w.binpersid();
  w.integer(offset);
  w.mark();
  for (auto d : size) w.integer(d);
  w.tuple_from_mark();
  w.mark();
  for (auto d : stride) w.integer(d);
  w.tuple_from_mark();
  w.boolean(false);
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.tuple_from_mark();
  w.reduce();
  w.setitems_from_mark();
  return w.finish();
}

std::string floats_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

TorchCheckpoint read_zip(const std::string& name, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string path = temp_path(name);
  write_stored_zip(path, entries);
  return read_pytorch_checkpoint(path);
}

}  // namespace

TEST(PytorchCheckpoint, FixturePtEqualsSafetensorsBitForBit) {
  TorchCheckpoint pt = read_pytorch_checkpoint(kFixture + "/weights.pt");
  TensorFile st = read_safetensors(kFixture + "/weights.safetensors");
  ASSERT_EQ(pt.tensors.size(), st.tensors.size());
  EXPECT_EQ(pt.tensors.size(), 749u);
  size_t complex_count = 0;
  for (const auto& t : pt.tensors) {
    ASSERT_TRUE(st.has(t.name)) << t.name;
    EXPECT_TRUE(t.tensor.identical(st.at(t.name)))
        << t.name << " " << shape_str(t.tensor.shape()) << " vs " << shape_str(st.at(t.name).shape());
    bool is_rope = t.name.size() > 10 && t.name.substr(t.name.size() - 10) == ".freqs_cis";
    EXPECT_EQ(t.complex, is_rope) << t.name;
    complex_count += t.complex;
  }
  EXPECT_EQ(complex_count, 4u);  // one RoPE table per ViT block of the tiny config
  // Every fixture tensor is contiguous in a stored, 64-byte aligned entry: all are mmap views.
  EXPECT_EQ(pt.zero_copy_tensors, pt.tensors.size());
  EXPECT_EQ(pt.copied_tensors, 0u);
  for (const auto& t : pt.tensors)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.tensor.raw()) % 64, 0u) << t.name << " is not 64-byte aligned";
}

TEST(PytorchCheckpoint, WeightsLoadPicksFormatByContent) {
  auto a = sam31::Weights::load(kFixture + "/weights.pt");
  auto b = sam31::Weights::load(kFixture + "/weights.safetensors");
  ASSERT_EQ(a.keys(), b.keys());
  for (auto& k : a.keys()) EXPECT_TRUE(a.get(k).identical(b.get(k))) << k;
  EXPECT_TRUE(a.is_complex("detector.backbone.vision_backbone.trunk.blocks.0.attn.freqs_cis"));
  EXPECT_EQ(a.file_order().front(), "tracker.model.maskmem_tpos_enc");
  // Same key order as the pickle (= the official state_dict order).
  TorchCheckpoint pt = read_pytorch_checkpoint(kFixture + "/weights.pt");
  for (size_t i = 0; i < pt.tensors.size(); ++i) EXPECT_EQ(a.file_order()[i], pt.tensors[i].name);
}

TEST(PytorchCheckpoint, KeyRemapAndModelUnwrap) {
  EXPECT_EQ(sam31::remap_checkpoint_key("sam3_model.backbone.x"), "detector.backbone.x");
  EXPECT_EQ(sam31::remap_checkpoint_key("sam2_predictor.model.y"), "tracker.model.y");
  EXPECT_EQ(sam31::remap_checkpoint_key("detector.z"), "detector.z");
  // {"model": {"sam3_model.a": t, "sam2_predictor.b": t}}
  pickle::Writer w;
  w.empty_dict();
  w.mark();
  w.string("model");
  w.empty_dict();
  w.mark();
  for (const char* name : {"sam3_model.a", "sam2_predictor.b"}) {
    w.string(name);
    w.global("torch._utils", "_rebuild_tensor_v2");
    w.mark();
    w.mark();
    w.string("storage");
    w.global("torch", "FloatStorage");
    w.string("0");
    w.string("cpu");
    w.integer(2);
    w.tuple_from_mark();
    w.binpersid();
    w.integer(0);
    w.mark();
    w.integer(2);
    w.tuple_from_mark();
    w.mark();
    w.integer(1);
    w.tuple_from_mark();
    w.boolean(false);
    w.global("collections", "OrderedDict");
    w.empty_tuple();
    w.reduce();
    w.tuple_from_mark();
    w.reduce();
  }
  w.setitems_from_mark();
  w.setitems_from_mark();
  std::string path = temp_path("wrapped.pt");
  write_stored_zip(path, {{"ck/data.pkl", w.finish()}, {"ck/data/0", floats_bytes({1.5f, -2})}, {"ck/version", "3\n"}});
  auto weights = sam31::Weights::load(path);
  EXPECT_EQ(weights.keys(), (std::vector<std::string>{"detector.a", "tracker.b"}));
  EXPECT_EQ(weights.get("detector.a").data<float>()[0], 1.5f);
  // Both tensors share one storage: both are views of it.
  EXPECT_EQ(weights.get("detector.a").raw(), weights.get("tracker.b").raw());
}

TEST(PytorchCheckpoint, WriteReadRoundTrip) {
  std::mt19937 rng(7);
  std::vector<TorchTensor> in;
  auto random_tensor = [&](DType dt, Shape shape) {
    Tensor t(dt, shape);
    auto* b = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) b[i] = uint8_t(rng());
    if (dt == DType::boolean)
      for (size_t i = 0; i < t.nbytes(); ++i) b[i] &= 1;
    return t;
  };
  in.push_back({"a.weight", random_tensor(DType::f32, {3, 5}), false});
  in.push_back({"b.scalar", random_tensor(DType::f32, {}), false});
  in.push_back({"c.empty", random_tensor(DType::f32, {0, 4}), false});
  in.push_back({"d.half", random_tensor(DType::f16, {7}), false});
  in.push_back({"e.bf16", random_tensor(DType::bf16, {2, 2, 2}), false});
  in.push_back({"f.long", random_tensor(DType::i64, {300}), false});
  in.push_back({"g.int", random_tensor(DType::i32, {70000}), false});  // numel needs BININT
  in.push_back({"h.bool", random_tensor(DType::boolean, {9}), false});
  in.push_back({"i.u8", random_tensor(DType::u8, {1, 1}), false});
  in.push_back({"j.freqs_cis", random_tensor(DType::f32, {6, 4, 2}), true});
  in.push_back({"k.double", random_tensor(DType::f64, {3}), false});
  std::string path = temp_path("roundtrip.pt");
  write_pytorch_checkpoint(path, in, "roundtrip");
  TorchCheckpoint out = read_pytorch_checkpoint(path);
  EXPECT_EQ(out.archive_name, "roundtrip");
  ASSERT_EQ(out.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out.tensors[i].name, in[i].name);
    EXPECT_EQ(out.tensors[i].complex, in[i].complex) << in[i].name;
    EXPECT_TRUE(out.tensors[i].tensor.identical(in[i].tensor)) << in[i].name;
  }
  EXPECT_EQ(out.copied_tensors, 0u);
  // Writing what we read reproduces the file byte for byte (deterministic writer).
  std::string path2 = temp_path("roundtrip2.pt");
  write_pytorch_checkpoint(path2, out.tensors, "roundtrip");
  EXPECT_EQ(read_all(path), read_all(path2));
}

TEST(PytorchCheckpoint, NonContiguousViewsAreCopied) {
  // Storage holds a 2x3 row-major matrix; the tensor is its transpose (size 3x2, stride 1,3).
  auto ck = read_zip("transpose.pt", {{"a/data.pkl", tensor_pickle("t", "FloatStorage", 6, 0, {3, 2}, {1, 3})},
                                      {"a/data/0", floats_bytes({0, 1, 2, 3, 4, 5})}});
  ASSERT_EQ(ck.tensors.size(), 1u);
  const Tensor& t = ck.tensors[0].tensor;
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  std::vector<float> got(t.data<float>(), t.data<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(ck.copied_tensors, 1u);
  // An offset view into the storage stays zero-copy when contiguous.
  auto ck2 = read_zip("offset.pt", {{"a/data.pkl", tensor_pickle("t", "FloatStorage", 6, 2, {2, 2}, {2, 1})},
                                    {"a/data/0", floats_bytes({0, 1, 2, 3, 4, 5})}});
  std::vector<float> got2(ck2.tensors[0].tensor.data<float>(), ck2.tensors[0].tensor.data<float>() + 4);
  EXPECT_EQ(got2, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(ck2.zero_copy_tensors, 1u);
  // A complex view with a column stride: (real, imag) pairs stay together.
  auto ck3 = read_zip("complex.pt", {{"a/data.pkl", tensor_pickle("c", "ComplexFloatStorage", 4, 0, {2}, {2})},
                                     {"a/data/0", floats_bytes({1, 2, 3, 4, 5, 6, 7, 8})}});
  const Tensor& c = ck3.tensors[0].tensor;
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  std::vector<float> got3(c.data<float>(), c.data<float>() + 4);
  EXPECT_EQ(got3, (std::vector<float>{1, 2, 5, 6}));
}

TEST(PytorchCheckpoint, RefusesViewsOutsideTheStorage) {
  auto zip = [&](const std::string& pkl, const std::string& data) {
    return [=] { read_zip("bad_view.pt", {{"a/data.pkl", pkl}, {"a/data/0", data}}); };
  };
  const std::string four = floats_bytes({1, 2, 3, 4});
  expect_error(zip(tensor_pickle("t", "FloatStorage", 4, 3, {2}, {1}), four),
               "reaches element 4 of a 4-element storage");
  expect_error(zip(tensor_pickle("t", "FloatStorage", 4, 0, {2, 2}, {3, 1}), four), "reaches element");
  expect_error(zip(tensor_pickle("t", "FloatStorage", 4, -1, {2}, {1}), four), "negative storage offset");
  expect_error(zip(tensor_pickle("t", "FloatStorage", 4, 0, {-2}, {1}), four), "bad dimension");
  expect_error(zip(tensor_pickle("t", "FloatStorage", 4, 0, {int64_t(1) << 50}, {0}), four), "bad dimension");
  // The storage claims more elements than its entry holds.
  expect_error(zip(tensor_pickle("t", "FloatStorage", 1000000000, 0, {4}, {1}), four), "should hold 1000000000");
  expect_error(zip(tensor_pickle("t", "FloatStorage", 4, 0, {4}, {1}), "abc"), "should hold 4");
  expect_error(zip(tensor_pickle("t", "ShortStorage", 2, 0, {2}, {1}), four), "ShortStorage is not supported");
  // Storage entry missing.
  expect_error(
      [&] {
        read_zip("no_storage.pt", {{"a/data.pkl", tensor_pickle("t", "FloatStorage", 4, 0, {4}, {1})}});
      },
      "storage '0' is not in the archive");
}

TEST(PytorchCheckpoint, RefusesTruncatedAndDamagedArchives) {
  const std::string good = read_all(kFixture + "/weights.pt");
  // Cut the real checkpoint at many points: every prefix is refused, none crashes.
  for (size_t cut : {size_t(0), size_t(3), size_t(30), size_t(100), size_t(5000), good.size() / 2, good.size() - 100,
                     good.size() - 22, good.size() - 1}) {
    std::string path = temp_path("truncated.pt");
    write_all(path, good.substr(0, cut));
    EXPECT_THROW(sam31::Weights::load(path), Error) << "cut at " << cut;
  }
  // Corrupt central directory offsets (last 22 bytes = end record).
  std::string bad = good;
  uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(&bad[bad.size() - 22 + 16], &huge, 4);
  std::string path = temp_path("bad_cd.pt");
  write_all(path, bad);
  expect_error([&] { read_pytorch_checkpoint(path); }, "central directory");
  // Not a zip at all, and a zip without data.pkl.
  write_all(path, "hello world, not a checkpoint");
  EXPECT_THROW(sam31::Weights::load(path), Error);
  expect_error([&] { read_zip("no_pkl.pt", {{"a/version", "3"}}); }, "data.pkl");
  // Big-endian checkpoints are refused rather than misread.
  expect_error(
      [&] {
        read_zip("be.pt", {{"a/data.pkl", tensor_pickle("t", "FloatStorage", 1, 0, {1}, {1})},
                           {"a/byteorder", "big"},
                           {"a/data/0", floats_bytes({1})}});
      },
      "byte order");
}

TEST(PytorchCheckpoint, RefusesCodeExecutionAndUnknownGlobals) {
  using namespace std::string_literals;
  // pickle of os.system("echo pwned") via GLOBAL + REDUCE (what a malicious __reduce__ produces).
  const std::string os_system =
      "\x80\x02"
      "cos\nsystem\n"
      "q\x00"
      "X\x0a\x00\x00\x00"
      "echo pwned"
      "q\x01"
      "\x85"
      "q\x02"
      "R"
      "q\x03"
      "."s;
  expect_error([&] { unpickle_plain(os_system); }, "global 'os.system' is not allowed");
  // The same inside a checkpoint archive.
  expect_error([&] { read_zip("evil.pt", {{"a/data.pkl", os_system}}); }, "os.system");
  // builtins.eval via STACK_GLOBAL (protocol 4 style).
  const std::string eval =
      "\x80\x04"
      "\x8c\x08"
      "builtins"
      "\x8c\x04"
      "eval"
      "\x93"
      "."s;
  expect_error([&] { unpickle_plain(eval); }, "global 'builtins.eval' is not allowed");
  // Object-building opcodes are refused by name.
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "(i__main__\nX\n."s);
      },
      "INST");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "(o."s);
      },
      "OBJ");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            ")"
            "\x81"
            "."s);
      },
      "NEWOBJ");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "\x82\x01"
            "."s);
      },
      "EXT1");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "S'x'\n."s);
      },
      "STRING");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "\xff"
            "."s);
      },
      "unknown pickle opcode 0xff");
  // A REDUCE of something that is not an allowed global.
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "N)R."s);
      },
      "REDUCE of None");
  // BINPERSID without the checkpoint hooks.
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "NQ."s);
      },
      "persistent ids are not supported");
}

TEST(PytorchCheckpoint, PickleVmBasicsAndLimits) {
  using namespace std::string_literals;
  // {'a': [1, -2, 70000, 2**40, 1.5, None, True, (b'xy',)], 'b': <memo of the list>}
  const std::string p =
      "\x80\x02"
      "}"
      "q\x00"
      "("
      "X\x01\x00\x00\x00"
      "a"
      "]"
      "q\x01"
      "("
      "K\x01"
      "J\xfe\xff\xff\xff"
      "J\x70\x11\x01\x00"
      "\x8a\x06\x00\x00\x00\x00\x00\x01"
      "G\x3f\xf8\x00\x00\x00\x00\x00\x00"
      "N"
      "\x88"
      "C\x02"
      "xy"
      "\x85"
      "e"
      "X\x01\x00\x00\x00"
      "b"
      "h\x01"
      "u"
      "."s;
  auto v = unpickle_plain(p);
  ASSERT_TRUE(v->is(pickle::Value::Kind::dict));
  auto a = v->get("a");
  ASSERT_TRUE(a && a->is(pickle::Value::Kind::list));
  ASSERT_EQ(a->items.size(), 8u);
  EXPECT_EQ(a->items[0]->i, 1);
  EXPECT_EQ(a->items[1]->i, -2);
  EXPECT_EQ(a->items[2]->i, 70000);
  EXPECT_EQ(a->items[3]->i, int64_t(1) << 40);
  EXPECT_EQ(a->items[4]->f, 1.5);
  EXPECT_TRUE(a->items[5]->is(pickle::Value::Kind::none));
  EXPECT_TRUE(a->items[6]->b);
  EXPECT_EQ(a->items[7]->items[0]->s, "xy");
  EXPECT_EQ(v->get("b"), a);  // memo keeps identity
  // Length fields larger than the data, missing STOP, stack underflow, unknown memo entries.
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "X\xff\xff\xff\x7f"
            "abc."s);
      },
      "needs 2147483647 bytes");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "N"s);
      },
      "without STOP");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "t."s);
      },
      "no MARK");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "\x85"
            "."s);
      },
      "stack underflow");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "h\x05"
            "."s);
      },
      "memo entry 5");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "NN."s);
      },
      "STOP with 2 values");
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "\x8a\x09"
            "123456789."s);
      },
      "too large");
  // A list appended to itself would be a reference cycle.
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "]"
            "q\x00"
            "h\x00"
            "a."s);
      },
      "cannot contain itself");
  // Deep nesting is bounded (each level: EMPTY_LIST, then APPEND into the list below).
  std::string deep = "\x80\x02";
  for (int i = 0; i < 100000; ++i) deep += "]";
  for (int i = 0; i < 99999; ++i) deep += "a";
  deep += ".";
  expect_error([&] { unpickle_plain(deep); }, "nested deeper");
  // Mutating a container after storing it elsewhere is refused (no cycles possible).
  expect_error(
      [&] {
        unpickle_plain(
            "\x80\x02"
            "]"
            "q\x00"
            "]"
            "q\x01"
            "h\x00"
            "a"
            "h\x00"
            "h\x01"
            "a."s);
      },
      "after it was stored");
}

TEST(PytorchCheckpoint, RandomCorruptionNeverCrashes) {
  // A small real checkpoint, then thousands of seeded corruptions (byte flips anywhere, with a bias to
  // the pickle, and every truncation): each read either succeeds or throws segmux::Error.
  std::vector<TorchTensor> in = {{"a", Tensor(DType::f32, {2, 3}), false},
                                 {"b", Tensor(DType::i64, {4}), false},
                                 {"c", Tensor(DType::f32, {3, 2, 2}), true}};
  const std::string path = temp_path("fuzz_base.pt");
  write_pytorch_checkpoint(path, in);
  const std::string good = read_all(path);
  auto parse = [&](const std::string& bytes) {
    auto st = Storage::allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(st->data, bytes.data(), bytes.size());
    try {
      parse_pytorch_checkpoint(st, "fuzz");
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  ASSERT_TRUE(parse(good));
  const size_t pkl_begin = 64, pkl_end = std::min(good.size(), size_t(64 + 700));  // data.pkl is the first entry
  std::mt19937 rng(1234);
  size_t accepted = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string bytes = good;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t pos = (iter % 2) ? pkl_begin + rng() % (pkl_end - pkl_begin) : rng() % bytes.size();
      bytes[pos] = char(rng() % 3 == 0 ? 0xFF : rng());
    }
    accepted += parse(bytes);
  }
  for (size_t cut = 0; cut < good.size(); cut += 7) EXPECT_FALSE(parse(good.substr(0, cut))) << cut;
  // Some corruptions only touch tensor bytes and still parse; most must be refused.
  EXPECT_LT(accepted, 4000u);
}

TEST(PytorchCheckpoint, DeflatedEntriesAreInflated) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 17) * 0.5f;
  const std::string pkl = tensor_pickle("w", "FloatStorage", 1000, 0, {10, 100}, {100, 1});
  auto ck = read_zip("deflated.pt", {{"z/data.pkl", pkl}, {"z/data/0", floats_bytes(values)}, {"z/version", "3\n"}});
  (void)ck;
  const std::string path = temp_path("deflated2.pt");
  write_stored_zip(path, {{"z/data.pkl", pkl}, {"z/data/0", floats_bytes(values)}, {"z/version", "3\n"}}, true);
  EXPECT_LT(read_all(path).size(), 2000u);  // really compressed
  TorchCheckpoint d = read_pytorch_checkpoint(path);
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].tensor.shape(), (Shape{10, 100}));
  EXPECT_EQ(std::vector<float>(d.tensors[0].tensor.data<float>(), d.tensors[0].tensor.data<float>() + 1000), values);
  EXPECT_EQ(d.copied_tensors, 1u);
  // A flipped byte inside the compressed storage fails the inflate or the CRC-32 check.
  std::string bytes = read_all(path);
  const size_t storage_data = bytes.find("z/data/0") + 8;  // local header name, then extra, then data
  bytes[storage_data + 80] ^= 0x55;
  write_all(path, bytes);
  EXPECT_THROW(read_pytorch_checkpoint(path), Error);
}
