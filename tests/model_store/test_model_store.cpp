// The model store: compile on first use into the cache, reuse, and recovery from what interrupted or
// damaged runs leave behind (an unfinished folder of a dead process, a corrupted compiled file).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "deploy/model_store/cache.h"
#include "deploy/model_store/model_store.h"
#include "kernels/isa.h"
#include "models/sam31/candidates.h"
#include "pipeline/backends/ort_backend.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::pipeline {
namespace {

namespace fs = std::filesystem;
const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("segmux-model-store-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

ModelSource fixture_source(const fs::path& cache) {
  ModelSource src;
  src.weights = kDir + "/weights.safetensors";
  src.config = kDir + "/config.json";
  src.read_config = segmux::verify::load_fixture_config;
  src.vocab = kDir + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  src.cache_dir = cache.string();
  src.num_threads = 1;
  return src;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != "checkpoint-hashes" && e.path().filename() != "verified-models")
      v.push_back(e.path());  // not the content-hash and verified-file memos
  return v;
}

TEST(ModelStore, CompilesOnceRecoversFromDamageAndRemovesAbandonedFolders) {
  TempDir tmp;
  std::vector<std::string> log;
  auto logger = [&](const std::string& s) { log.push_back(s); };
  OpenedModel first = open_model(fixture_source(tmp.path), logger);
  ASSERT_TRUE(first.model);
  const fs::path dir = first.model_dir;
  EXPECT_TRUE(fs::exists(dir / "model.json"));
  for (const auto& f : sam31::compiled_files()) EXPECT_TRUE(fs::exists(dir / (f.file + ".smx"))) << f.file;
  ASSERT_EQ(entries(tmp.path).size(), 1u) << "only the finished entry stays in the cache";

  // An unfinished folder of a process that no longer runs (pid 2^22 + 1 is above Linux's pid_max).
  const fs::path abandoned = dir.string() + ".partial-4194305";
  fs::create_directories(abandoned);
  // A damaged compiled file: one byte flipped in the middle.
  const fs::path smx = dir / (sam31::compiled_files().front().file + ".smx");
  {
    std::fstream f(smx, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(fs::file_size(smx) / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(std::streamoff(fs::file_size(smx) / 2));
    c = char(c ^ 0x5a);
    f.write(&c, 1);
  }
  log.clear();
  OpenedModel second = open_model(fixture_source(tmp.path), logger);
  ASSERT_TRUE(second.model);
  EXPECT_EQ(fs::path(second.model_dir), dir);
  bool said_damaged = false;
  for (const auto& l : log) said_damaged |= l.find("damaged") != std::string::npos;
  EXPECT_TRUE(said_damaged) << "a damaged cache entry is rebuilt and the log says why";
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_EQ(entries(tmp.path).size(), 1u);
}

TEST(ModelStore, AModelFolderTheUserGaveIsNeverRebuilt) {
  TempDir tmp;
  fs::create_directories(tmp.path / "model");
  ModelSource src;
  src.model_dir = (tmp.path / "model").string();
  EXPECT_THROW(open_model(src, [](const std::string&) {}), Error);  // no model.json
  EXPECT_TRUE(fs::exists(tmp.path / "model"));
}

}  // namespace
}  // namespace segmux::pipeline

namespace segmux::pipeline {
namespace {

// A model compiled for AVX-512 does not load at a lower kernel level (SEGMUX_ISA or another CPU), so
// the cache keeps one entry per level instead of getting stuck on the other level's entry.
TEST(ModelStore, CacheEntriesAreKeyedOnTheKernelIsa) {
  const Isa before = active_isa();
  set_active_isa(Isa::generic);
  const std::string generic = build_identity();
  set_active_isa(before);
  EXPECT_NE(generic.find("generic"), std::string::npos) << generic;
  if (active_isa() == Isa::avx512) {
    EXPECT_NE(build_identity(), generic);
  }
}

}  // namespace
}  // namespace segmux::pipeline

namespace segmux::pipeline {
namespace {

// `--weights CKPT --engine ort` runs the ONNX candidates only: its cache entry holds onnx/ (listed in
// its manifest) and no .smx, nothing is compiled, and the .smx engine has its own entry.
TEST(ModelStore, OrtEngineEntriesExportOnnxAndCompileNothing) {
  std::string why;
  if (!engine_available("ort", &why)) GTEST_SKIP() << why;
  TempDir tmp;
  std::vector<std::string> log;
  ModelSource src = fixture_source(tmp.path);
  src.engine = "ort";
  OpenedModel m = open_model(src, [&](const std::string& s) { log.push_back(s); });
  ASSERT_TRUE(m.model);
  const fs::path dir = m.model_dir;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_NE(e.path().extension(), ".smx") << e.path() << ": compiled although the engine is ort";
  for (const auto& l : log) EXPECT_EQ(l.find("compiling"), std::string::npos) << l;
  const std::string manifest = [&] {
    std::ifstream in(dir / "manifest.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  for (const auto& f : sam31::compiled_files()) {
    EXPECT_TRUE(fs::exists(dir / "onnx" / (f.file + ".onnx"))) << f.file;
    EXPECT_NE(manifest.find("\"onnx/" + f.file + ".onnx\""), std::string::npos) << f.file;
  }
  // Reused on the next run, without exporting again.
  log.clear();
  EXPECT_EQ(open_model(src, [&](const std::string& s) { log.push_back(s); }).model_dir, dir.string());
  for (const auto& l : log) EXPECT_EQ(l.find("exporting"), std::string::npos) << l;
  // The .smx engine: another entry, with the compiled files.
  src.engine = "smx";
  const fs::path smx_dir = open_model(src, [](const std::string&) {}).model_dir;
  EXPECT_NE(smx_dir, dir);
  EXPECT_TRUE(fs::exists(smx_dir / (sam31::compiled_files().front().file + ".smx")));
}

}  // namespace
}  // namespace segmux::pipeline

namespace segmux::pipeline {
namespace {

// Issue 24: the cache key held the running binary's size and mtime, so `segmux` and libsegmux (Python,
// C programs) never shared an entry and every rebuild compiled again. The key holds the hash of the
// code that makes compiled models instead: an entry the segmux command made is found by this program
// (linked like libsegmux, a different binary), with nothing compiled.
TEST(ModelStore, TheCommandAndTheLibraryShareCacheEntries) {
  const std::string hash = compiled_code_hash();
  EXPECT_EQ(hash.size(), 64u) << hash;
  EXPECT_NE(build_identity().find("code=" + hash), std::string::npos) << build_identity();
  TempDir tmp;
  const fs::path cache = tmp.path / "cache", out = tmp.path / "out";
  const std::string cmd =
      std::string(SEGMUX_BINARY_DIR) + "/segmux segment " + kDir + "/video/frames/00000.png --prompt shape --weights " +
      kDir + "/weights.safetensors --config " + kDir + "/config.json --vocab " + kDir +
      "/tokenizer/bpe_simple_vocab_16e6.txt.gz --cache-dir " + cache.string() + " --out " + out.string() + " -q 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ASSERT_EQ(entries(cache).size(), 1u);
  std::vector<std::string> log;
  OpenedModel m = open_model(fixture_source(cache), [&](const std::string& s) { log.push_back(s); });
  ASSERT_TRUE(m.model);
  EXPECT_EQ(entries(cache).size(), 1u);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("using compiled candidates cached in"), std::string::npos) << log[0];
}

// The generated code hash (cmake/code_hash_gen.cmake): the same for the same code wherever the tree is,
// another as soon as one byte of that code changes.
TEST(ModelStore, TheCodeHashChangesWithTheCodeOnly) {
  TempDir tmp;
  auto hash_of = [&](const fs::path& root) {
    const fs::path list = tmp.path / "files.txt", header = tmp.path / "hash.h";
    std::ofstream(list) << "gcc 12 -O2\n" << (root / "a.cpp").string() << "\n" << (root / "b.h").string() << "\n";
    const std::string cmd = "cmake -DLIST=" + list.string() + " -DROOT=" + root.string() + " -DOUT=" + header.string() +
                            " -P " + SEGMUX_SOURCE_DIR + "/cmake/code_hash_gen.cmake";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(header);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find("SEGMUX_CODE_HASH \"");
    return at == std::string::npos ? std::string() : text.substr(at + 18, 64);
  };
  for (const char* root : {"one", "two"}) {
    fs::create_directories(tmp.path / root);
    std::ofstream(tmp.path / root / "a.cpp") << "int f() { return 1; }\n";
    std::ofstream(tmp.path / root / "b.h") << "int f();\n";
  }
  const std::string one = hash_of(tmp.path / "one");
  ASSERT_EQ(one.size(), 64u);
  EXPECT_EQ(hash_of(tmp.path / "one"), one);  // rebuilt: the same
  EXPECT_EQ(hash_of(tmp.path / "two"), one);  // another checkout of the same code: the same
  std::ofstream(tmp.path / "two" / "a.cpp") << "int f() { return 2; }\n";
  EXPECT_NE(hash_of(tmp.path / "two"), one);  // the code changed
}

}  // namespace
}  // namespace segmux::pipeline
