// The request layer of `segmux serve` (service/service.h) without HTTP, on the fixtures' tiny model:
// the official request flow answers as the official predictor did on the fixture trace (same ids,
// masks within the parity bar), two sessions interleaved on one model answer as each alone, bad
// requests get a 4xx naming the problem and change nothing, limits and idle expiry hold.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "deploy/model_store/model_store.h"
#include "io/json_limits.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/masks/rle.h"
#include "pipeline/predictor/control_config.h"
#include "service/service.h"
#include "verify/sam31/fixture_config.h"

namespace fs = std::filesystem;
using nlohmann::json;
using segmux::service::RequestService;
using segmux::service::ResourceStore;
using segmux::service::ServiceError;
using segmux::service::ServiceLimits;
namespace pl = segmux::pipeline;

namespace {

const std::string kTiny = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

class Service : public ::testing::Test {
 public:
  static const json* trace() { return trace_; }

 protected:
  static void SetUpTestSuite() {
    root_ = fs::path(::testing::TempDir()) / ("segmux_service_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "allowed");
    fs::copy(kTiny + "/video/frames", root_ / "allowed" / "frames");
    fs::copy_file(kTiny + "/video/video.gif", root_ / "allowed" / "clip.gif");
    fs::create_directories(root_ / "outside");
    fs::copy(kTiny + "/video/frames", root_ / "outside" / "frames");
    fs::create_directory_symlink(root_ / "outside" / "frames", root_ / "allowed" / "escape");
    pl::ModelSource src;
    src.weights = kTiny + "/weights.safetensors";
    src.config = kTiny + "/config.json";
    src.read_config = segmux::verify::load_fixture_config;
    src.vocab = kTiny + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
    src.cache_dir = (root_ / "cache").string();
    model_ = new pl::OpenedModel(pl::open_model(src, [](const std::string&) {}));
    trace_ = new json(segmux::read_untrusted_json_file(kTiny + "/video/trace.json"));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete trace_;
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void SetUp() override {
    store_ = std::make_unique<ResourceStore>((root_ / "allowed").string(), 1 << 20);
    limits_.max_sessions = 2;
    svc_ = std::make_unique<RequestService>(
        *model_->model, segmux::verify::load_fixture_control_config(kTiny + "/config.json"), limits_, *store_);
  }
  void TearDown() override {
    svc_.reset();
    store_.reset();
  }
  std::string start(const std::string& path = "frames") {
    return svc_->handle({{"type", "start_session"}, {"resource_path", path}})["session_id"];
  }
  // The status of the ServiceError a request gets (0 if it succeeds).
  int status_of(const json& r) {
    try {
      svc_->handle(r);
    } catch (const ServiceError& e) {
      last_error_ = e.what();
      return e.status;
    }
    return 0;
  }
  std::vector<json> propagate(const std::string& id) {
    std::vector<json> frames;
    svc_->stream({{"type", "propagate_in_video"}, {"session_id", id}, {"propagation_direction", "forward"}})(
        [&](const json& f) {
          frames.push_back(f);
          return true;
        });
    return frames;
  }

  static fs::path root_;
  static pl::OpenedModel* model_;
  static json* trace_;
  ServiceLimits limits_;
  std::unique_ptr<ResourceStore> store_;
  std::unique_ptr<RequestService> svc_;
  std::string last_error_;
};
fs::path Service::root_;
pl::OpenedModel* Service::model_ = nullptr;
json* Service::trace_ = nullptr;

// One frame of our response against the trace's frame: same ids, masks IoU >= 0.99 (parity's bar).
void expect_matches_trace(const json& got, const json& ref) {
  const json& out = got.at("outputs");
  ASSERT_EQ(out.at("out_obj_ids").get<std::vector<int64_t>>(), ref.at("obj_ids").get<std::vector<int64_t>>())
      << "frame " << got.at("frame_index");
  for (size_t k = 0; k < ref.at("masks_rle").size(); ++k) {
    const json& m = ref["masks_rle"][k];
    pl::RleMask want{m["size"][0], m["size"][1], m["counts"].get<std::vector<int64_t>>()};
    const json& g = out["out_binary_masks"][k];
    pl::RleMask have = pl::coco_rle_from_string(g["counts"], g["size"][0], g["size"][1]);
    EXPECT_GE(pl::mask_iou(pl::rle_decode(have), pl::rle_decode(want)), 0.99)
        << "frame " << got.at("frame_index") << " object " << k;
  }
}

// Every propagated frame against the trace's frame of that index; the same frames.
void expect_matches_trace_all(const std::vector<json>& frames) {
  std::map<int, json> refs;
  for (const auto& f : (*Service::trace())["outputs"]) refs[f["frame_index"].get<int>()] = f;
  ASSERT_EQ(frames.size(), refs.size());
  for (const auto& f : frames) {
    auto it = refs.find(f["frame_index"].get<int>());
    ASSERT_NE(it, refs.end()) << "frame " << f["frame_index"] << " is not in the trace";
    expect_matches_trace(f, it->second);
  }
}

TEST_F(Service, OfficialFlowMatchesTheFixtureTrace) {
  const std::string id = start();
  const json& prompted = (*trace_)["add_prompt"];
  json first = svc_->handle({{"type", "add_prompt"},
                             {"session_id", id},
                             {"frame_index", prompted.value("frame_index", 0)},
                             {"text", (*trace_)["prompt"]}});
  expect_matches_trace(first, prompted["outputs"]);
  expect_matches_trace_all(propagate(id));
  EXPECT_EQ(svc_->handle({{"type", "close_session"}, {"session_id", id}})["is_success"], true);
  EXPECT_EQ(status_of({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"text", "shape"}}), 404);
}

TEST_F(Service, InterleavedSessionsAnswerAsAlone) {
  // b (another video, another text) runs between a's requests: its frames take the backend's frame
  // slots of the same indices and its text replaces a's; a must still answer exactly as alone.
  const std::string a = start(), b = start("clip.gif");
  svc_->handle({{"type", "add_prompt"}, {"session_id", a}, {"frame_index", 0}, {"text", (*trace_)["prompt"]}});
  svc_->handle({{"type", "add_prompt"}, {"session_id", b}, {"frame_index", 0}, {"text", "a striped dog"}});
  int b_frames = 0;
  svc_->stream({{"type", "propagate_in_video"}, {"session_id", b}, {"max_frame_num_to_track", 3}})([&](const json&) {
    ++b_frames;
    return true;
  });
  EXPECT_GT(b_frames, 0);
  expect_matches_trace_all(propagate(a));
}

TEST_F(Service, BadRequestsGetA4xxAndChangeNothing) {
  const std::string id = start();
  EXPECT_EQ(status_of(json::array()), 400);
  EXPECT_EQ(status_of({{"type", "make_coffee"}}), 400);
  EXPECT_NE(last_error_.find("unknown request type 'make_coffee'"), std::string::npos) << last_error_;
  EXPECT_EQ(status_of({{"type", "add_prompt"}, {"session_id", "nope"}, {"frame_index", 0}, {"text", "x"}}), 404);
  EXPECT_EQ(status_of({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 99}, {"text", "x"}}), 400);
  EXPECT_NE(last_error_.find("out of range"), std::string::npos) << last_error_;
  EXPECT_EQ(status_of({{"type", "add_prompt"},
                       {"session_id", id},
                       {"frame_index", 0},
                       {"points", {{0.5, 1.5}}},
                       {"point_labels", {1}},
                       {"obj_id", 0}}),
            400);
  EXPECT_NE(last_error_.find("[0, 1]"), std::string::npos) << last_error_;
  EXPECT_EQ(
      status_of(
          {{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"points", {{0.5, 0.5}}}, {"obj_id", 0}}),
      400);
  EXPECT_NE(last_error_.find("'points' need 'point_labels'"), std::string::npos) << last_error_;
  EXPECT_EQ(status_of({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"txt", "x"}}), 400);
  EXPECT_EQ(status_of({{"type", "remove_object"}, {"session_id", id}, {"obj_id", 0}}), 400);  // no prompt yet
  EXPECT_THROW(svc_->stream({{"type", "propagate_in_video"}, {"session_id", id}}), ServiceError);
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "../outside/frames"}}), 403);
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", (root_ / "outside" / "frames").string()}}), 403);
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "escape"}}), 403);
  EXPECT_NE(last_error_.find("symlink"), std::string::npos) << last_error_;
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "missing.mp4"}}), 404);
  EXPECT_THROW(RequestService::parse_body("{\"type\": "), ServiceError);
  // Nothing changed: the session still answers the official flow exactly.
  EXPECT_EQ(svc_->metrics()["sessions"], 1);
  json first = svc_->handle({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"text", "shape"}});
  expect_matches_trace(first, (*trace_)["add_prompt"]["outputs"]);
  EXPECT_EQ(status_of({{"type", "remove_object"}, {"session_id", id}, {"obj_id", 77}}), 404);
}

TEST_F(Service, LimitsRemoveCancelAndExpiry) {
  const std::string a = start();
  start();
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "frames"}}), 429);  // --max-sessions 2
  svc_->handle({{"type", "add_prompt"}, {"session_id", a}, {"frame_index", 0}, {"text", "shape"}});
  json removed = svc_->handle({{"type", "remove_object"}, {"session_id", a}, {"obj_id", 1}, {"frame_index", 0}});
  EXPECT_EQ(removed["is_success"], true);
  std::vector<json> after;
  svc_->stream({{"type", "propagate_in_video"}, {"session_id", a}, {"max_frame_num_to_track", 4}})([&](const json& f) {
    after.push_back(f);
    return true;
  });
  EXPECT_FALSE(after.empty());
  for (const auto& f : after) {
    const auto ids = f["outputs"]["out_obj_ids"].get<std::vector<int64_t>>();
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 0) << f["frame_index"];
  }
  // A cancel from the frame callback (as another connection would send) stops after that frame.
  int seen = 0;
  svc_->stream({{"type", "propagate_in_video"}, {"session_id", a}, {"propagation_direction", "forward"}})(
      [&](const json&) {
        if (++seen == 3) svc_->handle({{"type", "cancel_propagation"}, {"session_id", a}});
        return true;
      });
  EXPECT_EQ(seen, 3);
  // A client that goes away (sink false) stops it too, and the session stays usable.
  seen = 0;
  svc_->stream({{"type", "propagate_in_video"}, {"session_id", a}})([&](const json&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
  int again = 0;
  svc_->stream({{"type", "propagate_in_video"},
                {"session_id", a},
                {"propagation_direction", "forward"},
                {"max_frame_num_to_track", 4}})([&](const json&) {
    ++again;
    return true;
  });
  EXPECT_GE(again, 4);  // a whole run again after the stops
  EXPECT_NE(svc_->export_tracks(a).find("segmux-tracks-2"), std::string::npos);
  const std::string png = svc_->frame_png(a, 3);
  EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
  // Idle expiry.
  EXPECT_EQ(svc_->expire_idle(), 0);
  svc_.reset();
  limits_.session_timeout_s = 0.05;
  svc_ = std::make_unique<RequestService>(*model_->model, pl::default_control_config(), limits_, *store_);
  const std::string c = start();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_EQ(svc_->expire_idle(), 1);
  EXPECT_EQ(status_of({{"type", "reset_session"}, {"session_id", c}}), 404);
  EXPECT_EQ(svc_->metrics()["sessions_expired"], 1);
}

TEST_F(Service, UploadsAreCheckedAndResolved) {
  EXPECT_THROW(store_->add_upload("x.exe", "abc"), ServiceError);
  EXPECT_THROW(store_->add_upload("x.gif", ""), ServiceError);
  EXPECT_THROW(store_->add_upload("x.gif", std::string(2 << 20, 'a')), ServiceError);
  std::ifstream in(kTiny + "/video/video.gif", std::ios::binary);
  const std::string gif((std::istreambuf_iterator<char>(in)), {});
  json up = store_->add_upload("clip.GIF", gif);
  const std::string id = start(up["resource_path"]);
  EXPECT_EQ(svc_->handle({{"type", "close_session"}, {"session_id", id}})["is_success"], true);
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "upload:u99"}}), 404);
  const std::string dir = store_->upload_dir();
  EXPECT_TRUE(fs::exists(dir));
  store_.reset();
  svc_.reset();
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace

// Box exemplars through serve (issue 12): an add_prompt with bounding_boxes (no text) gives the official
// add_prompt outputs of tests/fixtures/sam31-tiny-prompts' exemplar cases, and another session's text
// prompt on the shared model is not touched by its boxes.
TEST_F(Service, BoxExemplarsStayInTheirSession) {
  const fs::path cases_path =
      fs::path(SEGMUX_SOURCE_DIR) / "tests/fixtures/sam31-tiny-prompts/video/exemplar_cases.json";
  if (!fs::exists(cases_path)) GTEST_SKIP() << "sam31-tiny-prompts fixtures not found";
  const json cases = segmux::read_untrusted_json_file(cases_path.string());
  const std::string a = start(), b = start();
  for (const auto& c : cases["cases"]) {
    svc_->handle({{"type", "reset_session"}, {"session_id", a}});  // each case after a reset, as recorded
    json req = c["request"];
    req["session_id"] = a;
    const json got = svc_->handle(req);
    const json& ref = c["outputs"];
    ASSERT_EQ(got.at("outputs").at("out_obj_ids").get<std::vector<int64_t>>(),
              ref.at("obj_ids").get<std::vector<int64_t>>())
        << c["name"];
    for (size_t k = 0; k < ref["masks_rle"].size(); ++k) {
      const json& m = ref["masks_rle"][k];
      const json& g = got["outputs"]["out_binary_masks"][k];
      pl::RleMask want{m["size"][0], m["size"][1], m["counts"].get<std::vector<int64_t>>()};
      pl::RleMask have = pl::coco_rle_from_string(g["counts"], g["size"][0], g["size"][1]);
      EXPECT_GE(pl::mask_iou(pl::rle_decode(have), pl::rle_decode(want)), 0.98) << c["name"] << " object " << k;
    }
    const json& prompted = (*trace_)["add_prompt"];
    svc_->handle({{"type", "reset_session"}, {"session_id", b}});
    json text = svc_->handle({{"type", "add_prompt"},
                              {"session_id", b},
                              {"frame_index", prompted.value("frame_index", 0)},
                              {"text", (*trace_)["prompt"]}});
    expect_matches_trace(text, prompted["outputs"]);
  }
  EXPECT_EQ(status_of({{"type", "add_prompt"},
                       {"session_id", a},
                       {"frame_index", 0},
                       {"bounding_boxes", {{0.5, 0.5, 0.0, 0.1}}},
                       {"bounding_box_labels", {1}}}),
            400);
  EXPECT_NE(last_error_.find("empty box"), std::string::npos) << last_error_;
}

// The page's clicks go through these requests: the official example sequence of
// tests/fixtures/sam31-tiny-prompts (text, propagate, remove, points refining object 2 on frame 6, a new
// object 0 from one click, propagate). A point prompt answers with the frame's kept outputs, as the
// official predictor (not the clicked object alone), and every answer lists the session's tracked ids
// (`tracked_obj_ids`), which name an object the frame does not show (the tiny model's clicks give no mask).
TEST_F(Service, PointPromptsAnswerAsTheOfficialSequence) {
  const json trace = segmux::read_untrusted_json_file(std::string(SEGMUX_SOURCE_DIR) +
                                                      "/tests/fixtures/sam31-tiny-prompts/video/trace.json");
  const std::string id = start();
  const int end = trace["example_sequence_requests"][1].get<int>();
  for (int k = 0; k < end; ++k) {
    const json& step = trace["requests"][k];
    json req = {{"session_id", id}};
    for (const char* key : {"type", "frame_index", "text", "obj_id", "points", "point_labels", "clear_old_points",
                            "propagation_direction"})
      if (step.contains(key)) req[key] = step[key];
    const std::string where = "request " + std::to_string(k) + " (" + step["type"].get<std::string>() + ")";
    if (step["type"] == "propagate_in_video") {
      std::vector<json> lines;
      svc_->stream(req)([&](const json& f) {
        lines.push_back(f);
        return true;
      });
      ASSERT_EQ(lines.size(), step["yields"].size()) << where;
      for (size_t i = 0; i < lines.size(); ++i) {
        const auto ids = lines[i]["outputs"]["out_obj_ids"].get<std::vector<int64_t>>();
        EXPECT_EQ(ids, step["yields"][i]["obj_ids"].get<std::vector<int64_t>>()) << where << " line " << i;
        EXPECT_TRUE(lines[i].at("tracked_obj_ids").is_array()) << where;
        // Masks of the propagation after the clicks are the engine's tracker-side work (parity --requests).
        if (k < end - 1) expect_matches_trace(lines[i], step["yields"][i]);
      }
      continue;
    }
    const json got = svc_->handle(req);
    SCOPED_TRACE(where);
    expect_matches_trace(got, step["outputs"]);
    if (step.contains("points")) {
      const auto tracked = got.at("tracked_obj_ids").get<std::vector<int64_t>>();
      EXPECT_NE(std::find(tracked.begin(), tracked.end(), step["obj_id"].get<int64_t>()), tracked.end())
          << "the clicked object is tracked although its mask is empty: " << got["tracked_obj_ids"];
    }
  }
  // Refining an object on a frame no prompt or propagation reached yet is a 400 naming the object.
  svc_->handle({{"type", "reset_session"}, {"session_id", id}});
  svc_->handle({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"text", "shape"}});
  EXPECT_EQ(status_of({{"type", "add_prompt"},
                       {"session_id", id},
                       {"frame_index", 5},
                       {"obj_id", 1},
                       {"points", {{0.5, 0.5}}},
                       {"point_labels", {1}}}),
            400);
  EXPECT_NE(last_error_.find("object 1 cannot be refined on frame 5"), std::string::npos) << last_error_;
}

// An object the tracker had dropped already (object 1 leaves the fixture video at frame 9) and the
// user removed stays out of the frame a later click answers with (the page shows that answer).
TEST_F(Service, RemovedObjectStaysOutOfClickAnswers) {
  const std::string id = start();
  svc_->handle({{"type", "add_prompt"}, {"session_id", id}, {"frame_index", 0}, {"text", (*trace_)["prompt"]}});
  propagate(id);
  svc_->handle({{"type", "remove_object"}, {"session_id", id}, {"obj_id", 1}});
  const json got = svc_->handle({{"type", "add_prompt"},
                                 {"session_id", id},
                                 {"frame_index", 8},
                                 {"obj_id", 0},
                                 {"points", {{0.5, 0.5}}},
                                 {"point_labels", {1}}});
  const auto ids = got["outputs"]["out_obj_ids"].get<std::vector<int64_t>>();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 0) << got["outputs"]["out_obj_ids"];
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1) << got["outputs"]["out_obj_ids"];
}

namespace {

// remove_object through the request service answers as the official predictor on the official traces of
// removals: the frame recomputed without the removed object, so the objects it overlapped get their
// pixels back (the history and boxes sets hold such removals), not the delivered frame with a row dropped.
TEST_F(Service, RemoveObjectAnswersAsTheOfficialTraces) {
  int removals = 0;
  for (const std::string set : {"sam31-tiny-remove", "sam31-tiny-history", "sam31-tiny-boxes"}) {
    const json trace = segmux::read_untrusted_json_file(std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/" + set +
                                                        "/video/trace.json");
    const std::string id = start();
    for (const json& r : trace.at("requests")) {
      const std::string type = r.at("type");
      json q = r;
      q.erase("outputs");
      q.erase("yields");
      q["session_id"] = id;
      SCOPED_TRACE(set + ": " + q.dump());
      if (type == "propagate_in_video") {
        svc_->stream(q)([](const json&) { return true; });
        continue;
      }
      const json got = svc_->handle(q);
      if (type == "remove_object") {
        expect_matches_trace(got, r.at("outputs"));
        ++removals;
      }
    }
    svc_->handle({{"type", "close_session"}, {"session_id", id}});
  }
  EXPECT_GE(removals, 5);
}

}  // namespace
