// Module parity on the two-bucket golden set (tests/fixtures/sam31-tiny-two-buckets, official tensors):
// the official propagation decoder and memory encoder calls there carry a batch of two multiplex
// buckets of one tracker state (multiplex_count 2, three objects). Every bucket of every recorded call
// is checked against its official slice, through the interpreter and the compiled runtime.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "../common/two_bucket_set.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "models/sam31/bucket_batch.h"
#include "models/sam31/tracker_io.h"
#include "verify/sam31/parity.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {

// file label -> buckets of its official call, for the set's modules/<prefix>*.safetensors.
std::map<std::string, int> official_batches(const std::string& prefix) {
  std::map<std::string, int> out;
  for (const auto& e : std::filesystem::directory_iterator(test::two_bucket_set_dir() + "/modules")) {
    const std::string stem = e.path().stem().string();
    if (stem.rfind(prefix, 0) != 0) continue;
    TensorFile f = read_safetensors(e.path().string());
    out[stem] = parse_multiplex_state(f.metadata.at("multiplex_state")).num_buckets();
  }
  return out;
}

}  // namespace

TEST(TwoBucketSet, TrackerModulesMatchTheOfficialCallsBucketByBucket) {
  const auto prop = official_batches("propagation_f"), mem = official_batches("memory_encoder_");
  ASSERT_GE(prop.size(), 2u);
  ASSERT_GE(mem.size(), 2u);
  verify::ParityOptions o;
  o.fixture_dir = test::two_bucket_set_dir();
  o.weights_files = {test::two_bucket_weights(::testing::TempDir())};
  o.candidates = {"memory_encoder", "propagation_decoder"};
  o.onnxruntime = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> labels;
  for (auto& row : r.rows) labels.insert(row.case_label);
  int two_bucket_calls = 0;
  for (const auto* files : {&prop, &mem})
    for (const auto& [label, buckets] : *files) {
      two_bucket_calls += buckets == 2;
      for (int b = 0; b < buckets; ++b) {
        const std::string want = buckets == 1 ? label : label + "_bucket" + std::to_string(b);
        EXPECT_TRUE(labels.count(want)) << want << "\n" << log.str();
      }
      // The official call as it was: every bucket in one call of the bucket variant.
      if (buckets > 1) {
        EXPECT_TRUE(labels.count(label + "_batch" + std::to_string(buckets))) << label << "\n" << log.str();
      }
    }
  EXPECT_GE(two_bucket_calls, 3);  // the set exists for calls with two buckets
}

TEST(BucketVariants, NamesParseAndBadOnesAreRefused) {
  std::string base;
  int b = 0;
  EXPECT_TRUE(parse_bucket_variant("buckets2", &base, &b));
  EXPECT_EQ(base, "");
  EXPECT_EQ(b, 2);
  EXPECT_TRUE(parse_bucket_variant("image_size_masks.buckets16", &base, &b));
  EXPECT_EQ(base, "image_size_masks");
  EXPECT_EQ(b, 16);
  EXPECT_EQ(bucket_variant("image_size_masks", 4), "image_size_masks.buckets4");
  for (const char* bad : {"buckets", "buckets1", "buckets0", "buckets02", "bucketsx", "buckets99999", "fp32_mlp", ""})
    EXPECT_FALSE(parse_bucket_variant(bad, &base, &b)) << bad;
  EXPECT_THROW(bucket_variant("", 1), Error);
  // Only the tracker candidates have bucket variants; elsewhere the name is an unknown variant.
  EXPECT_TRUE(has_bucket_variants(CandidateId::propagation_decoder));
  EXPECT_TRUE(has_bucket_variants(CandidateId::memory_encoder));
  EXPECT_FALSE(has_bucket_variants(CandidateId::backbone));
}

TEST(BucketVariants, StackingChecksTheSharedInputs) {
  auto t = [](float v, int64_t rows) {
    Tensor x(DType::f32, {rows, 2});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = v;
    return x;
  };
  std::vector<std::map<std::string, Tensor>> per = {{{"own", t(1, 3)}, {"shared", t(5, 1)}},
                                                    {{"own", t(2, 3)}, {"shared", t(5, 1)}}};
  auto s = stack_bucket_inputs(per, {"own"}, true);
  ASSERT_EQ(s.at("own").shape(), (Shape{6, 2}));
  EXPECT_EQ(s.at("own").data<float>()[0], 1.0f);
  EXPECT_EQ(s.at("own").data<float>()[11], 2.0f);
  EXPECT_EQ(s.at("shared").shape(), (Shape{1, 2}));
  auto parts = split_bucket_outputs({{"y", t(7, 2)}}, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].at("y").shape(), (Shape{1, 2}));
  per[1]["shared"] = t(6, 1);  // a "shared" input that differs between buckets
  EXPECT_THROW(stack_bucket_inputs(per, {"own"}, true), Error);
  EXPECT_THROW(split_bucket_outputs({{"y", t(7, 3)}}, 2), Error);
}
