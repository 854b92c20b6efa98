// Ids and frame numbers of official requests (issue 22, shared by serve and track --requests): an
// obj_id past the client range is refused (the next ids wrapped), and a frame index beyond 64 bits is
// reported as given (it read as -1).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "service/official_request.h"

using namespace segmux;

namespace {

std::string refusal(const std::string& text) {
  bool have_prompt = true;
  try {
    service::parse_official_request(nlohmann::json::parse(text), "request 1", 8, have_prompt);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

TEST(RequestIds, ObjIdsOutsideTheClientRangeAreRefused) {
  const std::string points = R"(, "points": [[0.5, 0.5]], "point_labels": [1]})";
  EXPECT_HAS(refusal(R"({"type": "add_prompt", "frame_index": 0, "obj_id": 9223372036854775807)" + points),
             "request 1 (add_prompt): obj_id 9223372036854775807 is outside 0..2147483647");
  EXPECT_HAS(refusal(R"({"type": "add_prompt", "frame_index": 0, "obj_id": -3)" + points), "obj_id -3 is outside");
  EXPECT_HAS(refusal(R"({"type": "remove_object", "obj_id": 2147483648})"), "obj_id 2147483648 is outside");
  EXPECT_EQ(refusal(R"({"type": "add_prompt", "frame_index": 0, "obj_id": 2147483647)" + points), "(no error)");
}

TEST(RequestIds, HugeFrameIndexIsReportedAsGiven) {
  // Before: "'frame_index' -1 is out of range".
  const std::string e = refusal(R"({"type": "add_prompt", "frame_index": 18446744073709551615, "text": "a"})");
  EXPECT_HAS(e, "'frame_index' 18446744073709551615 is out of range");
  EXPECT_EQ(e.find("-1"), std::string::npos) << e;
  EXPECT_HAS(refusal(R"({"type": "add_prompt", "frame_index": 4294967295, "text": "a"})"),
             "'frame_index' 4294967295 is out of range for a video of 8 frames");
}
