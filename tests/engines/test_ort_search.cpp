// Where segmux looks for ONNX Runtime: an installed binary never reaches into the build tree it came
// from, an explicit SEGMUX_ORT_LIB is the only path tried, a library beside the binary is found.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engines/ort/ort_model.h"

namespace segmux {
namespace {

const std::string kBuild = "/src/segmux/build/release";
const std::string kTreeLib = "/src/segmux/third_party/ort/lib/libonnxruntime.so";

TEST(OrtSearch, ExplicitLibraryIsTheOnlyOneTried) {
  EXPECT_EQ(ort_library_candidates("/opt/ort/libonnxruntime.so.1.30", kBuild, kBuild, kTreeLib),
            std::vector<std::string>{"/opt/ort/libonnxruntime.so.1.30"});
}

TEST(OrtSearch, BuildTreeCopyOnlyForBinariesInsideTheBuildTree) {
  EXPECT_EQ(ort_library_candidates("", kBuild, kBuild, kTreeLib),
            (std::vector<std::string>{kTreeLib, kBuild + "/libonnxruntime.so", "libonnxruntime.so"}));
  EXPECT_EQ(ort_library_candidates("", kBuild + "/tests", kBuild, kTreeLib).front(), kTreeLib);
}

TEST(OrtSearch, InstalledBinaryLooksBesideItselfThenTheLoaderPath) {
  EXPECT_EQ(ort_library_candidates("", "/usr/local/lib", kBuild, kTreeLib),
            (std::vector<std::string>{"/usr/local/lib/libonnxruntime.so", "libonnxruntime.so"}));
  // A sibling folder whose name starts with the build folder's is not inside it.
  EXPECT_EQ(ort_library_candidates("", kBuild + "-old", kBuild, kTreeLib).front(), kBuild + "-old/libonnxruntime.so");
  // A build configured without the copy.
  EXPECT_EQ(ort_library_candidates("", kBuild, kBuild, ""),
            (std::vector<std::string>{kBuild + "/libonnxruntime.so", "libonnxruntime.so"}));
}

}  // namespace
}  // namespace segmux
