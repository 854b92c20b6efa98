// Module parity on the two-bucket golden set (tests/fixtures/sam31-tiny-two-buckets, official tensors):
// the official propagation decoder and memory encoder calls there carry a batch of two multiplex
// buckets of one tracker state (multiplex_count 2, three objects). Every bucket of every recorded call
// is checked against its official slice, through the interpreter and the compiled runtime.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "../common/two_bucket_set.h"
#include "io/safetensors.h"
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
  ParityOptions o;
  o.fixture_dir = test::two_bucket_set_dir();
  o.weights_files = {test::two_bucket_weights(::testing::TempDir())};
  o.candidates = {"memory_encoder", "propagation_decoder"};
  o.onnxruntime = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  ParityReport r = run_parity(o, &log);
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
