// The multi-threaded ReduceMean (one contiguous run of axes) and Sigmoid kernels against the reference
// kernels: both compute in double in the same order, so they must agree exactly. Axis sets that are not
// one contiguous run, or unknown axes, stay with the reference kernel.
#include "harness.h"

namespace segmux::testing_cpu {
namespace {

TEST(CpuReduceMean, ContiguousAxesMatchReferenceExactly) {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  const std::vector<Case> cases = {
      {{1, 16, 9, 9}, {1}, 1},      // LayerNorm2d: the channel axis of NCHW
      {{2, 5, 33, 17}, {1}, 1},     // odd inner sizes (chunk tails)
      {{3, 700, 2}, {1}, 0},        // long reduction, keepdims 0
      {{4, 6, 1030}, {2}, 1},       // innermost axis
      {{4, 6, 7}, {-1}, 1},         // negative axis
      {{2, 3, 4, 5}, {1, 2}, 1},    // two adjacent axes
      {{2, 3, 4, 5}, {2, 1}, 0},    // listed out of order
      {{5, 7}, {}, 1},              // empty axes: all of them
      {{1, 64, 130, 130}, {1}, 1},  // enough work for both threads
  };
  uint32_t seed = 11;
  for (auto& c : cases) {
    ir::Attrs attrs{{"keepdims", c.keepdims}};
    if (!c.axes.empty()) attrs["axes"] = c.axes;
    expect_matches_reference(make_node("ReduceMean", attrs), {{random_tensor(c.shape, seed++)}}, 0, 0,
                             "ReduceMean " + shape_str(c.shape));
  }
}

TEST(CpuReduceMean, OtherAxisSetsAndTypesStayWithTheReference) {
  bool handled = true;
  run_node(cpu_provider(), make_node("ReduceMean", {{"axes", std::vector<int64_t>{0, 2}}}),
           {{random_tensor({2, 3, 4}, 1)}}, 2, &handled);
  EXPECT_FALSE(handled) << "axes 0 and 2 are not one contiguous run";
  run_node(cpu_provider(), make_node("ReduceMean", {{"noop_with_empty_axes", int64_t(1)}}),
           {{random_tensor({2, 3}, 2)}}, 2, &handled);
  EXPECT_FALSE(handled);
  Tensor ints = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  run_node(cpu_provider(), make_node("ReduceMean", {{"axes", std::vector<int64_t>{1}}}), {{ints}}, 2, &handled);
  EXPECT_FALSE(handled);
}

// At every instruction-set level: the vector exp differs from libm's, so exactness rests on the
// boundary check (values whose float rounding the difference could change go to libm).
class CpuSigmoid : public AtIsaLevel {};
SEGMUX_FOR_EACH_ISA(CpuSigmoid);

TEST_P(CpuSigmoid, MatchesReferenceExactly) {
  std::vector<float> xs;
  for (float x = -40.f; x <= 40.f; x += 0.0013f) xs.push_back(x);
  for (float x : {0.f, -0.f, 1e-30f, -1e-30f, 88.f, -88.f, 104.f, -104.f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN})
    xs.push_back(x);
  Tensor t = Tensor::from_vector<float>({int64_t(xs.size())}, xs);
  expect_matches_reference(make_node("Sigmoid"), {{t}}, 0, 0, "Sigmoid sweep");
  expect_matches_reference(make_node("Sigmoid"), {{random_tensor({3, 17, 5}, 4, -8.f, 8.f)}}, 0, 0, "Sigmoid small");
  expect_matches_reference(make_node("Sigmoid"), {{random_tensor({1, 4, 301, 257}, 5, -30.f, 30.f)}}, 0, 0,
                           "Sigmoid threaded");
  bool handled = true;
  run_node(cpu_provider(), make_node("Sigmoid"), {{Tensor::from_vector<double>({1}, {0.5})}}, 2, &handled);
  EXPECT_FALSE(handled) << "f64 stays with the reference";
}

}  // namespace
}  // namespace segmux::testing_cpu
