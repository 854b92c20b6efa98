// COCO compressed RLE (pycocotools' string counts) checked against decoders written here from
// pycocotools' documented algorithm (maskApi.c rleFrString + rleDecode), independently of the encoder:
// one in C++, one in Debian's python3, plus a vector computed by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/outputs/tracks_json.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

// Reads the string as pycocotools does: 6 bits per character (value - 48), 5 of data, bit 0x20 =
// another character follows, bit 0x10 of the last = negative; from the 4th count on, the count two
// back is added. Then the runs alternate 0/1 down the columns (Fortran order). Row-major result.
std::vector<uint8_t> independent_decode(const std::string& s, int h, int w) {
  std::vector<long long> cnts;
  size_t p = 0;
  while (p < s.size()) {
    long long x = 0;
    int k = 0;
    for (;;) {
      long long c = (long long)(s[p++]) - 48;
      x |= (c & 0x1f) << (5 * k);
      ++k;
      if (!(c & 0x20)) {
        if (c & 0x10) x -= (1LL << (5 * k));  // two's complement of a 5k-bit number
        break;
      }
    }
    if (cnts.size() > 2) x += cnts[cnts.size() - 2];
    cnts.push_back(x);
  }
  std::vector<uint8_t> fortran;
  for (size_t i = 0; i < cnts.size(); ++i) fortran.insert(fortran.end(), size_t(cnts[i]), uint8_t(i % 2));
  EXPECT_EQ(fortran.size(), size_t(h) * size_t(w)) << "runs do not cover the mask";
  std::vector<uint8_t> rows(size_t(h) * size_t(w), 0);
  for (size_t i = 0; i < std::min(fortran.size(), rows.size()); ++i)
    rows[(i % size_t(h)) * size_t(w) + i / size_t(h)] = fortran[i];
  return rows;
}

BinaryMask random_mask(std::mt19937& rng, int h, int w, double density, bool blobby) {
  BinaryMask m(h, w);
  std::uniform_real_distribution<double> u(0, 1);
  if (!blobby) {
    for (auto& p : m.pixels) p = u(rng) < density;
    return m;
  }
  // A few rectangles: long runs, counts that need several 5-bit groups on big masks.
  for (int r = 0; r < 3; ++r) {
    int x0 = int(u(rng) * w), y0 = int(u(rng) * h), x1 = x0 + int(u(rng) * w), y1 = y0 + int(u(rng) * h);
    for (int y = y0; y < std::min(h, y1); ++y)
      for (int x = x0; x < std::min(w, x1); ++x) m.at(y, x) = 1;
  }
  return m;
}

std::vector<BinaryMask> test_masks() {
  std::vector<BinaryMask> v;
  for (auto [h, w] : {std::pair{1, 1}, {1, 7}, {7, 1}, {5, 8}, {9, 13}, {31, 17}, {240, 320}}) {
    v.emplace_back(h, w);  // empty
    BinaryMask full(h, w);
    std::fill(full.pixels.begin(), full.pixels.end(), 1);
    v.push_back(full);
    BinaryMask one(h, w);
    one.at(h / 2, w / 2) = 1;
    v.push_back(one);
    BinaryMask last(h, w);
    last.at(h - 1, w - 1) = 1;  // the string ends with a 1-run
    v.push_back(last);
  }
  std::mt19937 rng(13);
  for (int i = 0; i < 40; ++i) {
    int h = 1 + int(rng() % 60), w = 1 + int(rng() % 60);
    v.push_back(random_mask(rng, h, w, i % 2 ? 0.5 : 0.05, false));
  }
  for (int i = 0; i < 10; ++i) v.push_back(random_mask(rng, 600 + int(rng() % 500), 700 + int(rng() % 900), 0, true));
  return v;
}

}  // namespace

TEST(CocoRle, HandComputedVectors) {
  // counts 0,2,33,1,4 (h 5 x w 8): "0" (0), "2" (2), 33 = 1 + 1*32 -> groups 1|0x20, 1 -> "Q1",
  // 1 - 2 = -1 -> 31 -> "O", 4 - 33 = -29 -> groups 3|0x20, 31 -> "SO".
  RleMask rle{5, 8, {0, 2, 33, 1, 4}};
  EXPECT_EQ(coco_counts_string(rle), "02Q1OSO");
  EXPECT_EQ(coco_rle_from_string("02Q1OSO", 5, 8).counts, rle.counts);
  // The mask behind it: pixels 0,1 (column 0, rows 0-1) and 35 (column 7, row 0) are set.
  BinaryMask m(5, 8);
  m.at(0, 0) = m.at(1, 0) = m.at(0, 7) = 1;
  EXPECT_EQ(rle_encode(m).counts, rle.counts);
  EXPECT_EQ(independent_decode("02Q1OSO", 5, 8), m.pixels);
  // counts 3,2,33,1,1: the third run is written as is although the first is not 0 (pycocotools'
  // `i > 2`; differencing it would give "n0"): "3", "2", "Q1", 1 - 2 -> "O", 1 - 33 = -32 -> groups
  // 0|0x20, 31 -> "PO". Set pixels: 3, 4 (column 0, rows 3-4) and 38 (column 7, row 3).
  RleMask second{5, 8, {3, 2, 33, 1, 1}};
  EXPECT_EQ(coco_counts_string(second), "32Q1OPO");
  EXPECT_EQ(coco_rle_from_string("32Q1OPO", 5, 8).counts, second.counts);
  BinaryMask m2(5, 8);
  m2.at(3, 0) = m2.at(4, 0) = m2.at(3, 7) = 1;
  EXPECT_EQ(rle_encode(m2).counts, second.counts);
  EXPECT_EQ(independent_decode("32Q1OPO", 5, 8), m2.pixels);
}

TEST(CocoRle, RoundTripsThroughAnIndependentDecoder) {
  for (const BinaryMask& m : test_masks()) {
    const std::string s = coco_counts_string(rle_encode(m));
    for (char c : s) ASSERT_TRUE(c >= 48 && c < 48 + 64) << "character " << int(c);
    ASSERT_EQ(independent_decode(s, m.height, m.width), m.pixels) << m.height << "x" << m.width << " " << s;
    ASSERT_EQ(rle_decode(coco_rle_from_string(s, m.height, m.width)).pixels, m.pixels);
  }
}

TEST(CocoRle, CompressedIsSmallerThanUncompressed) {
  std::mt19937 rng(5);
  BinaryMask m = random_mask(rng, 480, 640, 0, true);
  const RleMask rle = rle_encode(m);
  EXPECT_LT(coco_counts_string(rle).size(), nlohmann::json(rle.counts).dump().size());
}

TEST(CocoRle, BadStringsAreRefusedWithAReason) {
  EXPECT_THROW(coco_rle_from_string("0", 2, 2), Error);           // covers 0 of 4 pixels
  EXPECT_THROW(coco_rle_from_string("Q", 5, 8), Error);           // ends inside a run
  EXPECT_THROW(coco_rle_from_string("0 2", 5, 8), Error);         // not a counts character
  EXPECT_THROW(coco_rle_from_string("O", 5, 8), Error);           // -1
  EXPECT_THROW(coco_rle_from_string("ooooooooo0", 5, 8), Error);  // absurdly long run
  EXPECT_THROW(coco_rle_from_string("0Y1", 5, 8), Error);         // 41 > 40 pixels
  // A byte that is not UTF-8 is named readably, so the message stays valid UTF-8 (fuzz_coco_rle).
  try {
    coco_rle_from_string(std::string("02\xff", 3), 5, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("character '\\xFF' at offset 2"), std::string::npos) << e.what();
  }
  try {
    coco_rle_from_string("02", 5, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cover 2 of 40"), std::string::npos) << e.what();
  }
}

// The same round trip through a decoder in Debian's python3 (pycocotools' algorithm, no packages).
TEST(CocoRle, PythonDecoderReadsWhatWeWrite) {
  const char* python = "/usr/bin/python3";
  if (!fs::exists(python)) GTEST_SKIP() << "no " << python << " (scripts/setup.sh installs it)";
  const std::string dir = ::testing::TempDir() + "/coco_rle_py";
  fs::create_directories(dir);
  nlohmann::json cases = nlohmann::json::array();
  for (const BinaryMask& m : test_masks()) {
    std::string bits;
    for (uint8_t p : m.pixels) bits.push_back(char('0' + p));
    cases.push_back({{"rle", mask_rle_json(m, RleForm::compressed)}, {"bits", bits}});
  }
  std::ofstream(dir + "/cases.json") << cases.dump();
  std::ofstream(dir + "/decode.py") << R"PY(
import json, sys
sys.path.insert(0, sys.argv[2])
from coco_rle import decode_counts
def decode(size, s):
    h, w = size
    cnts = decode_counts(s)
    flat = []
    for i, c in enumerate(cnts):
        flat += [i % 2] * c
    assert len(flat) == h * w, (len(flat), h, w)
    return "".join(str(flat[x * h + y]) for y in range(h) for x in range(w))
cases = json.load(open(sys.argv[1]))
for i, c in enumerate(cases):
    if decode(c["rle"]["size"], c["rle"]["counts"]) != c["bits"]:
        print("case", i, "differs"); sys.exit(1)
print("ok", len(cases))
)PY";
  const std::string cmd =
      std::string(python) + " " + dir + "/decode.py " + dir + "/cases.json " SEGMUX_SOURCE_DIR "/tests/common 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {};
  std::string out;
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_EQ(out, "ok " + std::to_string(cases.size()) + "\n");
}

TEST(TracksJson, RoundsScoresBoxesAndTimesWithoutFloatNoise) {
  FrameOutput out;
  out.frame_index = 3;
  out.obj_ids = {7};
  out.probs = {0.912345678f};
  out.boxes_xywh = {{0.1f, 0.333333343f, 0.25f, 1.0f / 3.0f}};
  out.masks = {BinaryMask(2, 2)};
  const std::string text = frame_json(out, RleForm::compressed, 0.1 + 0.2, "dog").dump();
  EXPECT_NE(text.find("\"score\":0.9123}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"box_xywh\":[0.1,0.33333,0.25,0.33333]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"time_s\":0.3}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"counts\":\"4\""), std::string::npos) << text;
  EXPECT_NE(frame_json(out, RleForm::uncompressed, std::nullopt, "dog").dump().find("\"time_s\":null"),
            std::string::npos);
  EXPECT_EQ(round_decimals(-0.00001, 4), 0.0);
  EXPECT_FALSE(std::signbit(round_decimals(-0.00001, 4)));
  EXPECT_THROW(parse_rle_form("zip"), Error);
}
