// The model cache keyed by the checkpoint's content: a checkpoint rewritten in place with the same size
// and mtime (as cp -p, rsync -t or tar leave it) is hashed again and never reuses the stale entry;
// `prune` keeps the most recently used entries within the size and touches nothing that is not ours.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "deploy/model_store/cache.h"
#include "io/sha256.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::pipeline {
namespace {

namespace fs = std::filesystem;
const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("segmux-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

ModelSource source(const fs::path& weights, const fs::path& cache) {
  ModelSource src;
  src.weights = weights.string();
  src.config = kDir + "/config.json";
  src.read_config = segmux::verify::load_fixture_config;
  src.vocab = kDir + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  src.cache_dir = cache.string();
  src.num_threads = 1;
  return src;
}

struct timespec mtime_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mtim;
}

// Flips one byte at `offset` in place and puts the old mtime back (what cp -p / rsync -t / tar do).
void rewrite_same_size_same_mtime(const fs::path& p, uint64_t offset) {
  const struct timespec old = mtime_of(p);
  const auto size = fs::file_size(p);
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  const char c = char(f.get());
  f.seekp(std::streamoff(offset));
  f.put(char(c ^ 0x01));
  f.close();
  const struct timespec times[2] = {old, old};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
  ASSERT_EQ(fs::file_size(p), size);
  const struct timespec now = mtime_of(p);
  ASSERT_TRUE(now.tv_sec == old.tv_sec && now.tv_nsec == old.tv_nsec);
}

TEST(CheckpointHash, MemoisedPerFileVersionAndNeverStale) {
  TempDir tmp("hash-memo");
  const fs::path ckpt = tmp.path / "weights.bin";
  {
    std::string data(1 << 20, 'a');
    for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7919 >> 5);
    std::ofstream(ckpt, std::ios::binary).write(data.data(), std::streamsize(data.size()));
  }
  int hashed = 0;
  auto log = [&](const std::string& s) { hashed += s.find("hashing") != std::string::npos; };
  const std::string h1 = checkpoint_content_hash(ckpt.string(), tmp.path.string(), log);
  EXPECT_EQ(h1, sha256_file(ckpt.string()));
  EXPECT_EQ(checkpoint_content_hash(ckpt.string(), tmp.path.string(), log), h1);
  EXPECT_EQ(hashed, 1) << "the second call uses the memo";
  // A byte outside the three 64 KiB samples: only the file identity (ctime) can notice it.
  rewrite_same_size_same_mtime(ckpt, 300 << 10);
  const std::string h2 = checkpoint_content_hash(ckpt.string(), tmp.path.string(), log);
  EXPECT_EQ(h2, sha256_file(ckpt.string()));
  EXPECT_NE(h2, h1);
  EXPECT_EQ(hashed, 2);
}

TEST(ModelCache, SameSizeSameMtimeRewriteCompilesAgain) {
  TempDir tmp("cache-rewrite");
  const fs::path ckpt = tmp.path / "weights.safetensors";
  fs::copy_file(kDir + "/weights.safetensors", ckpt);
  const fs::path cache = tmp.path / "cache";
  auto quiet = [](const std::string&) {};
  const std::string first = open_model(source(ckpt, cache), quiet).model_dir;
  EXPECT_EQ(open_model(source(ckpt, cache), quiet).model_dir, first) << "unchanged weights reuse the entry";
  // A byte in the middle of the tensor data (weights still load; results would differ).
  rewrite_same_size_same_mtime(ckpt, fs::file_size(ckpt) / 3);
  const std::string second = open_model(source(ckpt, cache), quiet).model_dir;
  EXPECT_NE(second, first) << "rewritten weights must not reuse the stale compiled model";
  EXPECT_EQ(list_cache(cache.string()).size(), 2u);
}

void make_entry(const fs::path& dir, size_t bytes, time_t last_used) {
  fs::create_directories(dir);
  std::ofstream(dir / "model.json") << "{}";
  std::ofstream(dir / "a.smx", std::ios::binary) << std::string(bytes, 'x');
  const struct timespec t[2] = {{last_used, 0}, {last_used, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.c_str(), t, 0), 0);
}

TEST(ModelCache, PruneKeepsMostRecentWithinSizeAndTouchesNothingElse) {
  TempDir tmp("cache-prune");
  const time_t now = time(nullptr);
  make_entry(tmp.path / "old", 4000, now - 300);
  make_entry(tmp.path / "mid", 4000, now - 200);
  make_entry(tmp.path / "new", 4000, now - 100);
  fs::create_directories(tmp.path / "not-ours");  // no model.json: never touched
  std::ofstream(tmp.path / "not-ours" / "data") << std::string(50000, 'z');
  // An unfinished build of a running process (this one): never touched either.
  fs::create_directories(tmp.path / ("x.partial-" + std::to_string(::getpid())));

  std::vector<CacheEntry> entries = list_cache(tmp.path.string());
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].name.find("x.partial-"), 0u);  // made now: most recent
  EXPECT_EQ(entries[1].name, "new");

  const uint64_t entry_bytes = entries[1].bytes;
  const CacheCleanup r = prune_cache(tmp.path.string(), 2 * entry_bytes + 10);
  EXPECT_EQ(r.removed, 1);
  EXPECT_LE(r.bytes_left, 2 * entry_bytes + 10);
  EXPECT_FALSE(fs::exists(tmp.path / "old"));
  EXPECT_TRUE(fs::exists(tmp.path / "mid") && fs::exists(tmp.path / "new"));
  EXPECT_TRUE(fs::exists(tmp.path / "not-ours" / "data"));

  EXPECT_EQ(prune_cache(tmp.path.string(), 0).removed, 2);
  EXPECT_TRUE(fs::exists(tmp.path / "not-ours" / "data"));
  EXPECT_TRUE(fs::exists(tmp.path / ("x.partial-" + std::to_string(::getpid()))));
  clear_cache(tmp.path.string());
  EXPECT_TRUE(fs::exists(tmp.path / "not-ours" / "data"));
  EXPECT_TRUE(fs::exists(tmp.path / ("x.partial-" + std::to_string(::getpid()))));
}

TEST(ModelCache, ParseSize) {
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("10K"), 10240u);
  EXPECT_EQ(parse_size("1.5G"), uint64_t(1.5 * 1024 * 1024 * 1024));
  EXPECT_EQ(parse_size("500MiB"), 500ull << 20);
  EXPECT_EQ(parse_size("2GB"), 2ull << 30);
  for (const std::string bad : {"", "G", "-1G", "10Q", "1e30T", "abc"}) EXPECT_THROW(parse_size(bad), Error) << bad;
}

}  // namespace
}  // namespace segmux::pipeline
