// .npy read/write: round trips for every supported dtype, v1/v2/v3 headers, clear errors otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "io/npy.h"

using namespace segmux;

namespace {

std::shared_ptr<Storage> bytes(const std::string& s) {
  auto st = Storage::allocate(s.size());
  if (!s.empty()) std::memcpy(st->data, s.data(), s.size());
  return st;
}

// A hand-written .npy with the given version and header dict.
std::string npy(int major, const std::string& dict, const std::string& data) {
  std::string h = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  if (major == 1) {
    out += char(h.size() & 0xff);
    out += char(h.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) out += char((h.size() >> (8 * i)) & 0xff);
  }
  return out + h + data;
}

}  // namespace

TEST(Npy, RoundTripsEveryDtype) {
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::i64, DType::i32, DType::i8, DType::u8, DType::boolean}) {
    Tensor t(d, {2, 3});
    for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, d == DType::boolean ? i % 2 : double(i) - 2);
    Tensor back = parse_npy(bytes(npy_bytes(t)), "t");
    EXPECT_TRUE(back.identical(t)) << dtype_name(d);
  }
  Tensor scalar = Tensor::scalar<float>(2.5f);
  EXPECT_TRUE(parse_npy(bytes(npy_bytes(scalar)), "s").identical(scalar));
  Tensor vec = Tensor::from_vector<int64_t>({3}, {1, 2, 3});
  std::string b = npy_bytes(vec);
  EXPECT_NE(b.find("(3,)"), std::string::npos);
  EXPECT_EQ((b.size() - 3 * 8) % 64, 0u);  // header padded to 64 bytes
  std::string path = ::testing::TempDir() + "/segmux_npy_" + std::to_string(::getpid()) + ".npy";
  write_npy(path, vec);
  EXPECT_TRUE(read_npy(path).identical(vec));
  std::remove(path.c_str());
}

TEST(Npy, ReadsVersion2And3Headers) {
  float v[2] = {1.5f, -2};
  std::string data(reinterpret_cast<const char*>(v), 8);
  for (int major : {1, 2, 3}) {
    Tensor t = parse_npy(bytes(npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data)), "v");
    ASSERT_EQ(t.shape(), (Shape{2}));
    EXPECT_EQ(t.data<float>()[1], -2.0f);
  }
}

TEST(Npy, RejectsWhatItCannotRead) {
  std::string data(8, '\0');
  auto err = [&](const std::string& b) -> std::string {
    try {
      parse_npy(bytes(b), "f");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(err("not a numpy file").find("bad magic"), std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data)).find("'>f4'"),
            std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data)).find("Fortran"),
            std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", data)).find("unsupported"),
            std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data)).find("truncated"),
            std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data)).find("after its data"),
            std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", data)).find("shape"),
            std::string::npos);
  EXPECT_NE(err(npy(1, "{'descr': '<f4', 'fortran_order': False, }", data)).find("'shape'"), std::string::npos);
  EXPECT_NE(err(npy(4, "{}", data)).find("version 4"), std::string::npos);
  std::string cut = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data).substr(0, 30);
  EXPECT_FALSE(err(cut).empty());
  EXPECT_NE(err(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,99999999999), }", data))
                .find("too large"),
            std::string::npos);
  EXPECT_THROW(npy_bytes(Tensor(DType::bf16, {2})), Error);
  EXPECT_THROW(read_npy("/nonexistent/file.npy"), Error);
}
