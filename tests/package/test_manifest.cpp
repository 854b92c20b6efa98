// SHA-256 against the FIPS 180-4 vectors, and the package manifest check: a tampered, truncated,
// missing, unlisted or linked file, and manifest paths leaving the folder, are refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "deploy/package/package.h"
#include "io/sha256.h"
#include "models/sam31/config.h"
#include "verify/sam31/fixture_config.h"

namespace segmux {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a', fed in uneven pieces (crossing block boundaries every way).
  Sha256 h;
  const std::string a(999, 'a');
  size_t fed = 0;
  for (size_t piece = 1; fed < 1000000; piece = piece % 997 + 13) {
    const size_t n = std::min({piece, a.size(), size_t(1000000) - fed});
    h.update(a.data(), n);
    fed += n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileMatchesBytesAndNamesUnreadableFile) {
  const fs::path p = fs::temp_directory_path() / ("segmux-sha-" + std::to_string(::getpid()));
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 2654435761u >> 13);
  std::ofstream(p, std::ios::binary).write(data.data(), std::streamsize(data.size()));
  uint64_t bytes = 0;
  EXPECT_EQ(sha256_file(p.string(), &bytes), sha256_hex(data.data(), data.size()));
  EXPECT_EQ(bytes, data.size());
  fs::remove(p);
  try {
    sha256_file(p.string());
    FAIL() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}

class Manifest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("segmux-manifest-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "onnx");
    write("model.json", "{}");
    write("a.smx", std::string(5000, 'x'));
    write("onnx/a.onnx", "onnx bytes");
    package::write_manifest(dir_.string(), {{"note", "test"}});
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel, std::ios::binary) << text; }
  // The single problem reported, which must name `what`.
  void expect_problem(const std::string& what) {
    const package::ManifestCheck c = package::check_manifest(dir_.string());
    ASSERT_EQ(c.problems.size(), 1u) << (c.problems.empty() ? "no problem found" : c.problems[0]);
    EXPECT_NE(c.problems[0].find(what), std::string::npos) << c.problems[0];
  }
  fs::path dir_;
};

TEST_F(Manifest, IntactPackagePasses) {
  const package::ManifestCheck c = package::check_manifest(dir_.string());
  EXPECT_TRUE(c.ok()) << c.problems[0];
  EXPECT_EQ(c.files_checked, 3);
  const nlohmann::json m = package::read_manifest(dir_.string());
  EXPECT_EQ(m["note"], "test");
  for (const auto& f : m["files"]) EXPECT_FALSE(fs::path(f["path"].get<std::string>()).is_absolute());
}

TEST_F(Manifest, TamperedByteIsNamed) {
  std::fstream f(dir_ / "a.smx", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(2500);
  f.put('y');
  f.close();
  expect_problem("'a.smx' does not match its sha256");
}

TEST_F(Manifest, TruncatedFileIsNamed) {
  fs::resize_file(dir_ / "a.smx", 4000);
  expect_problem("'a.smx' has 4000 bytes, the manifest says 5000 (truncated)");
}

TEST_F(Manifest, MissingFileIsNamed) {
  fs::remove(dir_ / "onnx/a.onnx");
  expect_problem("'onnx/a.onnx' is missing");
}

TEST_F(Manifest, UnlistedFileAndSymlinksAreRefused) {
  write("extra.txt", "x");
  expect_problem("'extra.txt' is not listed");
  fs::remove(dir_ / "extra.txt");
  fs::create_symlink("/etc/hostname", dir_ / "link");
  expect_problem("'link' is a symbolic link");
  fs::remove(dir_ / "link");
  // A listed file replaced by a link to a copy with the same bytes is refused too.
  fs::copy_file(dir_ / "a.smx", dir_.string() + "-copy.smx");
  fs::remove(dir_ / "a.smx");
  fs::create_symlink(dir_.string() + "-copy.smx", dir_ / "a.smx");
  expect_problem("'a.smx' is a symbolic link");
  fs::remove(dir_.string() + "-copy.smx");
}

TEST_F(Manifest, PathsLeavingThePackageAreRefused) {
  const nlohmann::json original = package::read_manifest(dir_.string());
  for (const std::string bad : {"../outside", "/etc/passwd", "onnx/../../x", "./a.smx", "a//b"}) {
    nlohmann::json m = original;
    m["files"].push_back({{"path", bad}, {"size", 1}, {"sha256", std::string(64, '0')}});
    write("manifest.json", m.dump());
    expect_problem("manifest path '" + bad + "' is not a plain relative path");
  }
}

TEST_F(Manifest, RuntimeOnlyCheckIgnoresRouteFiles) {
  fs::remove(dir_ / "onnx/a.onnx");
  write("extra.txt", "x");
  EXPECT_TRUE(package::check_manifest(dir_.string(), false, package::runtime_file).ok());
  fs::resize_file(dir_ / "a.smx", 10);
  EXPECT_FALSE(package::check_manifest(dir_.string(), false, package::runtime_file).ok());
}

TEST_F(Manifest, NotAPackageIsNamed) {
  fs::remove(dir_ / "manifest.json");
  try {
    package::check_manifest(dir_.string());
    FAIL() << "no error without a manifest";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no manifest.json"), std::string::npos) << e.what();
  }
}

// Fields of the wrong type are a segmux::Error naming the manifest and the field, not the JSON
// library's type_error (fuzz_package_manifest); names that are not UTF-8 are quoted readably.
TEST_F(Manifest, FieldsOfTheWrongTypeAreNamed) {
  const nlohmann::json original = package::read_manifest(dir_.string());
  const std::pair<const char*, nlohmann::json> bad[] = {{"format", 1},
                                                        {"verification_reference", 7},
                                                        {"verification", nlohmann::json::array()},
                                                        {"verification_seed", -3},
                                                        {"checkpoint", "w.pt"}};
  for (const auto& [key, value] : bad) {
    nlohmann::json m = original;
    m[key] = value;
    write("manifest.json", m.dump());
    try {
      package::read_manifest(dir_.string());
      FAIL() << key << " accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("manifest.json"), std::string::npos) << what;
      if (std::string(key) != "format") {
        EXPECT_NE(what.find(key), std::string::npos) << what;
      }
    }
  }
  nlohmann::json m = original;
  m["files"].push_back({{"path", std::string("a\x01"
                                             "b")},
                        {"size", 1},
                        {"sha256", std::string(64, '0')}});
  write("manifest.json", m.dump());
  expect_problem("'a\\x01b' is missing");
}

}  // namespace
}  // namespace segmux

namespace segmux {
namespace {

// model.json: a package's relative vocabulary resolves against the folder wherever it lies; an
// absolute one (model folders made before packages) is kept, so old folders still load.
TEST(ModelJson, RelativeVocabularyFollowsTheFolderAbsoluteStillLoads) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("segmux-model-json-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  sam31::ModelConfig cfg =
      segmux::verify::load_fixture_config(std::string(SEGMUX_FIXTURES) + "/sam31-tiny/config.json");
  package::write_model_json(dir.string(), cfg, "tokenizer/v.txt.gz", {{"checkpoint", "w.pt"}});
  sam31::ModelConfig got;
  std::string vocab;
  package::read_model_json(dir.string(), got, vocab);
  EXPECT_EQ(vocab, dir.string() + "/tokenizer/v.txt.gz");
  EXPECT_EQ(sam31::config_to_json(got), sam31::config_to_json(cfg));

  nlohmann::json old = {{"producer", "segmux-0.1.0"},
                        {"config", nlohmann::json::parse(sam31::config_to_json(cfg))},
                        {"weights", "/somewhere/w.pt"},
                        {"vocab", "/somewhere/bpe_simple_vocab_16e6.txt.gz"}};
  std::ofstream(dir / "model.json") << old.dump();
  vocab.clear();
  package::read_model_json(dir.string(), got, vocab);
  EXPECT_EQ(vocab, "/somewhere/bpe_simple_vocab_16e6.txt.gz");
  fs::remove_all(dir);
}

// Issue 22: `track --model PKG --engine ort` checks only the files an ONNX Runtime run reads, and that
// check let a link among them through (it ran a modified ONNX file verify-package refuses).
TEST_F(Manifest, ARestrictedCheckRefusesLinksAmongTheFilesItReads) {
  const std::string modified = dir_.string() + "-modified.onnx";
  std::ofstream(modified, std::ios::binary) << "evil bytes";
  fs::remove(dir_ / "onnx/a.onnx");
  fs::create_symlink(modified, dir_ / "onnx/a.onnx");
  package::ManifestCheck c = package::check_manifest(dir_.string(), true, package::ort_runtime_file);
  ASSERT_FALSE(c.ok()) << "a linked ONNX file passed the run's check";
  EXPECT_NE(c.problems[0].find("'onnx/a.onnx' is a symbolic link"), std::string::npos) << c.problems[0];
  // A link the run does not read stays out of its report (verify-package reports it).
  fs::remove(dir_ / "onnx/a.onnx");
  std::ofstream(dir_ / "onnx/a.onnx", std::ios::binary) << "onnx bytes";
  fs::create_symlink(modified, dir_ / "notes.txt");
  EXPECT_TRUE(package::check_manifest(dir_.string(), true, package::ort_runtime_file).ok());
  EXPECT_FALSE(package::check_manifest(dir_.string()).ok());
  fs::remove(dir_ / "notes.txt");
  // A linked folder holding files the run reads is refused as well.
  const fs::path elsewhere = dir_.string() + "-onnx";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "a.onnx", std::ios::binary) << "onnx bytes";
  fs::remove_all(dir_ / "onnx");
  fs::create_directory_symlink(elsewhere, dir_ / "onnx");
  c = package::check_manifest(dir_.string(), true, package::ort_runtime_file);
  ASSERT_FALSE(c.ok()) << "a linked onnx/ folder passed the run's check";
  EXPECT_NE(c.problems[0].find("'onnx' is a symbolic link"), std::string::npos) << c.problems[0];
  fs::remove_all(elsewhere);
  fs::remove(modified);
}

TEST_F(Manifest, APackageReachedThroughALinkedFolderIsChecked) {
  // Before: "'<link>' is not a folder" (a deployment's "current" link to its package, say).
  const fs::path link = dir_.string() + "-current";
  fs::remove(link);
  fs::create_directory_symlink(dir_, link);
  const package::ManifestCheck c = package::check_manifest(link.string());
  EXPECT_TRUE(c.ok()) << c.problems[0];
  EXPECT_EQ(c.files_checked, 3);
  EXPECT_TRUE(package::check_manifest(link.string(), true, package::ort_runtime_file).ok());
  fs::remove(link);
}

}  // namespace
}  // namespace segmux
