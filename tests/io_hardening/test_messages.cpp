// Clear messages: a reader given another kind of file says what the file is and which reader fits,
// vocabularies that exist but cannot serve say why, allocation failures name the file, and names
// that are not UTF-8 are escaped.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstring>
#include <new>
#include <string>

#include "hardening_util.h"
#include "io/alloc_guard.h"
#include "io/npy.h"
#include "io/printable.h"
#include "io/pytorch_zip.h"
#include "io/safetensors.h"
#include "models/sam31/tokenizer.h"

using namespace segmux;
using namespace segmux::hardening;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  EXPECT_EQ(::mkdir(dir.c_str(), 0700), 0) << std::strerror(errno);
  return dir;
}

std::string gzip_bytes(const std::string& text) {
  const std::string path = temp_path("gz.tmp");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), unsigned(text.size()));
  gzclose(f);
  std::string out;
  auto st = map_file(path);
  out.assign(reinterpret_cast<const char*>(st->data), st->nbytes);
  return out;
}

}  // namespace

TEST(MessageHardening, ReadersNameTheKindOfFileTheyWereGiven) {
  Tensor t(DType::f32, {2, 2});
  const std::string pt = temp_path("weights.pt");
  write_pytorch_checkpoint(pt, {{"w", t, false}});
  const std::string st = temp_path("weights.safetensors");
  write_safetensors(st, {{"w", t}});
  const std::string npy = temp_path("w.npy");
  write_npy(npy, t);
  // Before: "header length ... runs past the end of the file" / "too short to be a safetensors file".
  expect_error([&] { read_safetensors(pt); },
               {pt, "not a safetensors file: it is a zip archive", "PyTorch", "--weights"});
  expect_error([&] { read_safetensors(npy); }, {npy, "not a safetensors file: it is a NumPy .npy array"});
  expect_error([&] { read_npy(st); }, {st, "is not a .npy file (bad magic): it is a safetensors file"});
  expect_error([&] { read_pytorch_checkpoint(st); }, {st, "not a PyTorch zip checkpoint: it is a safetensors file"});
  const std::string legacy = write_temp("legacy.pt", std::string("\x80\x02}q\x00.", 6));
  expect_error([&] { read_pytorch_checkpoint(legacy); }, {"legacy (non-zip) torch.save"});
  const std::string empty = write_temp("empty.safetensors", "");
  expect_error([&] { read_safetensors(empty); }, {empty, "it is an empty file"});
  const std::string junk = write_temp("junk.safetensors", "\x01\x02\x03");
  expect_error([&] { read_safetensors(junk); },
               {"is a file of 3 bytes starting with 01 02 03: too short to be a safetensors file (at least 8 bytes) "
                "or a PyTorch .pt checkpoint"});
  const std::string truncated = write_temp("cut.safetensors", std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10));
  expect_error([&] { read_safetensors(truncated); }, {"header length 255 runs past the end"});
}

TEST(MessageHardening, NamesThatAreNotUtf8AreEscaped) {
  const std::string path = ::testing::TempDir() + "no\xff\xfe-such.safetensors";
  const std::string msg = expect_error([&] { read_safetensors(path); }, {"no\\xFF\\xFE-such.safetensors"});
  EXPECT_TRUE(is_valid_utf8(msg)) << msg;
  EXPECT_EQ(printable("a\tb\xc3\xa9\xe2\x82"), "a\\x09b\xc3\xa9\\xE2\\x82");
  EXPECT_EQ(printable(std::string(300, 'x'), 10), "xxxxxxxxxx...");
  // A tensor name with control bytes inside a safetensors file (JSON escapes) is shown escaped.
  const std::string header = R"({"a\u0007": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})";
  uint64_t n = header.size();
  const std::string bad =
      write_temp("ctl.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header + std::string(4, '\0'));
  expect_error([&] { read_safetensors(bad); }, {"tensor 'a\\x07'"});
}

TEST(MessageHardening, AllocationFailuresNameTheFile) {
  expect_error([] { guard_allocation("model.pt", []() -> int { throw std::bad_alloc(); }); },
               {"model.pt: out of memory while reading it"});
  expect_error([] { guard_allocation("x.npy", []() -> int { throw std::length_error("vector"); }); },
               {"x.npy: a size in it is too large"});
}

TEST(MessageHardening, VocabularyThatExistsButCannotServeSaysWhy) {
  const char* kName = "bpe_simple_vocab_16e6.txt.gz";
  // Not gzip-compressed (before: "not found" although the file is there).
  const std::string plain = temp_dir("vocab_plain");
  write_temp("vocab_plain/" + std::string(kName), "#version: 0.2\nh e\n");
  expect_error([&] { sam31::Tokenizer::load(plain); }, {kName, "is not gzip-compressed (it is"});
  expect_error([&] { sam31::Tokenizer::load(plain + "/" + kName); }, {"is not gzip-compressed"});
  // A FIFO or a folder under the vocabulary's name (before: "not found"; a FIFO must not hang).
  const std::string fifo_dir = temp_dir("vocab_fifo");
  const std::string fifo = fifo_dir + "/" + kName;
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  temp_path("vocab_fifo/" + std::string(kName));
  expect_error([&] { sam31::Tokenizer::load(fifo_dir); }, {fifo, "exists but is not a regular file"});
  expect_error([&] { sam31::Tokenizer::load(fifo); }, {fifo, "is not a regular file"});
  // Damaged gzip data, invalid UTF-8, no merges.
  const std::string damaged = write_temp("damaged_vocab.txt.gz", gzip_bytes(std::string(5000, 'a')).substr(0, 30));
  expect_error([&] { sam31::Tokenizer::load(damaged); }, {damaged, "damaged gzip data"});
  const std::string not_utf8 = write_temp("bad_utf8_vocab.txt.gz", gzip_bytes("#v\nh \xff\n"));
  expect_error([&] { sam31::Tokenizer::load(not_utf8); }, {not_utf8, "is not valid UTF-8"});
  const std::string no_merges = write_temp("empty_vocab.txt.gz", gzip_bytes("#version only"));
  expect_error([&] { sam31::Tokenizer::load(no_merges); }, {no_merges, "has no merges"});
  // Really absent: still "not found", and a checkpoint given instead says it was not a vocabulary.
  const std::string ckpt_dir = temp_dir("vocab_none");
  const std::string ckpt = write_temp("vocab_none/weights.pt", "PK\x03\x04");
  expect_error([&] { sam31::Tokenizer::load(ckpt); }, {"not found", "is not a gzip vocabulary"});
  // A small valid vocabulary loads; a prompt that is not UTF-8 says where it goes wrong.
  const std::string ok = write_temp("ok_vocab.txt.gz", gzip_bytes("#version: 0.2\nh e\nhe l\n"));
  const auto tok = sam31::Tokenizer::load(ok);
  EXPECT_GT(tok.vocab_size(), 512);
  const std::string msg = expect_error([&] { tok.tokenize_one("caf\xc3\xa9 \xff\xfe dog"); },
                                       {"not valid UTF-8 (at byte 6: '\\xFF\\xFE dog')"});
  EXPECT_TRUE(is_valid_utf8(msg)) << msg;
}
