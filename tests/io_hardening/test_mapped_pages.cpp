// Pages of a read-only file mapping (map_file) can leave the resident set once read (checksums at
// load, weights after prepacking) and read the same bytes again; other memory is never touched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/mapped_pages.h"
#include "io/files.h"

using namespace segmux;

namespace {

// RssFile of this process, bytes (file-backed resident pages).
size_t rss_file_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssFile:", 0) == 0) return size_t(std::stoull(line.substr(8))) * 1024;
  return 0;
}

}  // namespace

TEST(MappedPages, ReleasedPagesLeaveRssAndReadBackTheSame) {
  const auto path = std::filesystem::path(::testing::TempDir()) / ("segmux_pages_" + std::to_string(::getpid()));
  const size_t n = size_t(48) << 20;
  std::vector<unsigned char> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  write_file_atomic(path.string(), bytes.data(), n);
  {
    auto m = map_file(path.string());
    EXPECT_GE(mapped_bytes(), n);
    const auto* p = reinterpret_cast<const unsigned char*>(m->data);
    EXPECT_EQ(std::memcmp(p, bytes.data(), n), 0);  // every page resident now
    const size_t before = rss_file_bytes();
    release_mapped_pages(p, n);
    const size_t after = rss_file_bytes();
    if (before == 0) GTEST_SKIP() << "no RssFile in /proc/self/status";
    EXPECT_LE(after + n / 2, before) << "RssFile " << before << " -> " << after;
    EXPECT_EQ(std::memcmp(p, bytes.data(), n), 0);  // the same bytes come back
    release_mapped_pages(p + 100, 10);              // less than a page: nothing to drop, no error
    release_mapped_pages(p + n - 10, 100);          // runs past the mapping: ignored
    EXPECT_EQ(std::memcmp(p, bytes.data(), n), 0);
  }
  std::filesystem::remove(path);
}

TEST(MappedPages, HeapMemoryIsNeverDropped) {
  std::vector<float> heap(size_t(4) << 20, 3.25f);  // 16 MiB: many whole pages
  release_mapped_pages(heap.data(), heap.size() * sizeof(float));
  for (size_t i = 0; i < heap.size(); i += 1021) ASSERT_EQ(heap[i], 3.25f) << i;
  release_mapped_pages(nullptr, 100);
}
