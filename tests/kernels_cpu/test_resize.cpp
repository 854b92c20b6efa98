// The threaded nearest Resize against the reference kernel (an index mapping: exact), for every
// coordinate transform and rounding mode, by scales and by sizes; other modes stay with the reference.
#include "harness.h"

namespace segmux::testing_cpu {
namespace {

TEST(CpuResize, NearestMatchesReferenceExactly) {
  const Tensor x = random_tensor({2, 3, 7, 9}, 1);
  const Tensor big = random_tensor({1, 4, 96, 80}, 2);  // enough for both threads
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"})
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      const std::string label = std::string(ctm) + " " + nearest;
      ir::Node n = make_node("Resize", {{"mode", std::string("nearest")},
                                        {"coordinate_transformation_mode", std::string(ctm)},
                                        {"nearest_mode", std::string(nearest)}});
      const Tensor scales = Tensor::from_vector<float>({4}, {1.f, 1.f, 2.5f, 0.6f});
      expect_matches_reference(n, {{x}, {Tensor(), false, true}, {scales, true}}, 0, 0, label + " scales");
      const Tensor sizes = Tensor::from_vector<int64_t>({4}, {2, 3, 14, 5});
      expect_matches_reference(n, {{x}, {Tensor(), false, true}, {Tensor(), false, true}, {sizes, true}}, 0, 0,
                               label + " sizes");
      const Tensor up2 = Tensor::from_vector<int64_t>({4}, {1, 4, 192, 160});
      expect_matches_reference(n, {{big}, {Tensor(), false, true}, {Tensor(), false, true}, {up2, true}}, 0, 0,
                               label + " 2x");
    }
}

TEST(CpuResize, OtherModesAndTypesStayWithTheReference) {
  const Tensor scales = Tensor::from_vector<float>({4}, {1.f, 1.f, 2.f, 2.f});
  bool handled = true;
  run_node(cpu_provider(), make_node("Resize", {{"mode", std::string("linear")}}),
           {{random_tensor({1, 2, 3, 3}, 3)}, {Tensor(), false, true}, {scales, true}}, 2, &handled);
  EXPECT_FALSE(handled);
  run_node(cpu_provider(),
           make_node("Resize", {{"mode", std::string("nearest")},
                                {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}),
           {{random_tensor({1, 2, 3, 3}, 4)},
            {Tensor::from_vector<float>({8}, {0, 0, 0, 0, 1, 1, 1, 1}), true},
            {scales, true}},
           2, &handled);
  EXPECT_FALSE(handled);
  run_node(cpu_provider(), make_node("Resize", {{"mode", std::string("nearest")}}),
           {{Tensor::from_vector<double>({1, 1, 1, 2}, {1.0, 2.0})}, {Tensor(), false, true}, {scales, true}}, 2,
           &handled);
  EXPECT_FALSE(handled);
}

}  // namespace
}  // namespace segmux::testing_cpu
