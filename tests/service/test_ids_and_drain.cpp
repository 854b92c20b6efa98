// Scale-out pieces of the request layer (issues 22.6, 23.1-2): session and upload ids are random
// version-4 UUIDs naming their replica (never counters another client can guess or another replica
// repeats), a draining service refuses new sessions only, and the upload folders of dead servers are
// removed at start while every other folder is left alone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "deploy/model_store/model_store.h"
#include "pipeline/predictor/control_config.h"
#include "service/service.h"
#include "verify/sam31/fixture_config.h"

namespace fs = std::filesystem;
using nlohmann::json;
using segmux::service::random_id;
using segmux::service::RequestService;
using segmux::service::ResourceStore;
using segmux::service::ServiceError;
namespace pl = segmux::pipeline;

namespace {

const std::string kTiny = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::regex kUuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

bool is_uuid4(const std::string& s) { return std::regex_match(s, kUuid4); }

// A scratch folder used as $TMPDIR for the duration of a test.
struct TempDirEnv {
  TempDirEnv() {
    root = fs::path(::testing::TempDir()) / ("segmux_ids_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    const char* old = std::getenv("TMPDIR");
    if (old) saved = old;
    had = old != nullptr;
    ::setenv("TMPDIR", root.c_str(), 1);
  }
  ~TempDirEnv() {
    if (had)
      ::setenv("TMPDIR", saved.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  fs::path root;
  std::string saved;
  bool had = false;
};

TEST(RandomIds, AreVersion4UuidsNamingTheReplica) {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = random_id("");
    EXPECT_TRUE(is_uuid4(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 2000u);  // 122 random bits: a repeat here means a broken generator
  const std::string tagged = random_id("r-2_b");
  ASSERT_EQ(tagged.rfind("r-2_b.", 0), 0u) << tagged;
  EXPECT_TRUE(is_uuid4(tagged.substr(6))) << tagged;
}

TEST(UploadFolders, OnlyDeadServersFoldersAreRemovedAtStart) {
  TempDirEnv env;
  auto folder = [&](const std::string& name, bool lock_file) {
    fs::create_directories(env.root / name);
    std::ofstream(env.root / name / "u.gif") << "x";
    if (lock_file) std::ofstream(env.root / name / "owner.lock") << "12345\n";
    return env.root / name;
  };
  const fs::path dead = folder("segmux-serve-dead01", true);       // kill -9: lock file, nobody holds it
  const fs::path creating = folder("segmux-serve-new002", false);  // no lock file: never touched
  const fs::path live = folder("segmux-serve-live03", true);       // a live server holds its lock
  const fs::path other = folder("not-segmux-dead04", true);
  fs::create_directories(env.root / "elsewhere");
  std::ofstream(env.root / "elsewhere" / "owner.lock") << "1\n";
  fs::create_directory_symlink(env.root / "elsewhere", env.root / "segmux-serve-link05");
  const int held = ::open((live / "owner.lock").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  std::string mine;
  {
    ResourceStore store("", 1 << 20);
    mine = store.upload_dir();
    EXPECT_FALSE(fs::exists(dead)) << "a dead server's upload folder stays behind";
    EXPECT_TRUE(fs::exists(creating / "u.gif"));
    EXPECT_TRUE(fs::exists(live / "u.gif"));
    EXPECT_TRUE(fs::exists(other / "u.gif"));
    EXPECT_TRUE(fs::exists(env.root / "elsewhere" / "owner.lock"));  // a symlink is not followed
    // The new folder is locked for the store's life: another server would leave it alone.
    const int probe = ::open((fs::path(mine) / "owner.lock").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(probe, 0);
    EXPECT_NE(::flock(probe, LOCK_EX | LOCK_NB), 0);
    ::close(probe);
    ResourceStore second("", 1 << 20);  // a second live server beside it
    EXPECT_TRUE(fs::exists(mine));
  }
  EXPECT_FALSE(fs::exists(mine));
  ::close(held);
}

TEST(UploadIds, AreRandomAndNameTheReplica) {
  TempDirEnv env;
  ResourceStore store("", 1 << 20, 32, "r3");
  const json a = store.add_upload("a.gif", "GIF89a"), b = store.add_upload("b.gif", "GIF89a");
  const std::string ida = a.at("upload_id"), idb = b.at("upload_id");
  EXPECT_NE(ida, idb);
  ASSERT_EQ(ida.rfind("r3.", 0), 0u) << ida;
  EXPECT_TRUE(is_uuid4(ida.substr(3))) << ida;
  EXPECT_EQ(a.at("resource_path"), "upload:" + ida);
  EXPECT_TRUE(fs::exists(store.resolve("upload:" + ida)));
  try {
    store.resolve("upload:u0");  // the old counter ids name nothing
    ADD_FAILURE() << "upload:u0 resolved";
  } catch (const ServiceError& e) {
    EXPECT_EQ(e.status, 404);
  }
}

class Drain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::path(::testing::TempDir()) / ("segmux_drain_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "allowed");
    fs::copy(kTiny + "/video/frames", root_ / "allowed" / "frames");
    pl::ModelSource src;
    src.weights = kTiny + "/weights.safetensors";
    src.config = kTiny + "/config.json";
    src.read_config = segmux::verify::load_fixture_config;
    src.vocab = kTiny + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
    src.cache_dir = (root_ / "cache").string();
    model_ = new pl::OpenedModel(pl::open_model(src, [](const std::string&) {}));
  }
  static void TearDownTestSuite() {
    delete model_;
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void SetUp() override {
    store_ = std::make_unique<ResourceStore>((root_ / "allowed").string(), 1 << 20);
    svc_ = std::make_unique<RequestService>(*model_->model,
                                            segmux::verify::load_fixture_control_config(kTiny + "/config.json"),
                                            segmux::service::ServiceLimits{}, *store_);
  }
  int status_of(const json& r) {
    try {
      svc_->handle(r);
    } catch (const ServiceError& e) {
      return e.status;
    }
    return 0;
  }
  static inline fs::path root_;
  static inline pl::OpenedModel* model_ = nullptr;
  std::unique_ptr<ResourceStore> store_;
  std::unique_ptr<RequestService> svc_;
};

TEST_F(Drain, SessionIdsAreRandomAndNameTheReplica) {
  const std::string plain = svc_->handle({{"type", "start_session"}, {"resource_path", "frames"}})["session_id"];
  EXPECT_TRUE(is_uuid4(plain)) << plain;  // as the official API (uuid4 when the client sends none)
  svc_->set_replica_id("r1");
  const std::string tagged = svc_->handle({{"type", "start_session"}, {"resource_path", "frames"}})["session_id"];
  ASSERT_EQ(tagged.rfind("r1.", 0), 0u) << tagged;
  EXPECT_TRUE(is_uuid4(tagged.substr(3)));
  EXPECT_EQ(svc_->metrics().at("replica_id"), "r1");
}

TEST_F(Drain, RefusesNewSessionsOnlyAndCountsOpenOnes) {
  const std::string sid = svc_->handle({{"type", "start_session"}, {"resource_path", "frames"}})["session_id"];
  EXPECT_EQ(svc_->open_sessions(), 1);
  svc_->set_draining(true);
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "frames"}}), 503);
  EXPECT_EQ(status_of({{"type", "add_prompt"}, {"session_id", sid}, {"frame_index", 0}, {"text", "shape"}}), 0);
  EXPECT_EQ(status_of({{"type", "close_session"}, {"session_id", sid}}), 0);
  EXPECT_EQ(svc_->open_sessions(), 0);
  EXPECT_EQ(svc_->metrics().at("draining"), true);
  svc_->set_draining(false);
  EXPECT_EQ(status_of({{"type", "start_session"}, {"resource_path", "frames"}}), 0);
}

}  // namespace
