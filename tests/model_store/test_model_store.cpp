// The model store: compile on first use into the cache, reuse, and recovery from what interrupted or
// damaged runs leave behind (an unfinished folder of a dead process, a corrupted compiled file).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/isa.h"
#include "models/sam31/candidates.h"
#include "pipeline/backends/ort_backend.h"
#include "pipeline/model_store/model_store.h"

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
  ASSERT_TRUE(first.backend);
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
  ASSERT_TRUE(second.backend);
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
  ASSERT_TRUE(m.backend);
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
