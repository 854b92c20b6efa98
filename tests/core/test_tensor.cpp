#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/tensor.h"
#include "io/safetensors.h"

using namespace segmux;

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly half way between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16RoundTrip) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(f16_to_f32(f32_to_f16(v)), v) << v;
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
}

TEST(Tensor, ReshapeSharesStorageAndChecksCount) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_THROW(t.reshaped({4}), Error);
  EXPECT_THROW(t.data<int64_t>(), Error);
}

TEST(Safetensors, RoundTripAndRejectsTruncation) {
  std::string path = ::testing::TempDir() + "/rt.safetensors";
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<int64_t>({3}, {7, 8, 9});
  write_safetensors(path, {{"a", a}, {"b", b}}, {{"k", "v"}});
  TensorFile f = read_safetensors(path);
  EXPECT_TRUE(f.at("a").identical(a));
  EXPECT_TRUE(f.at("b").identical(b));
  EXPECT_EQ(f.metadata.at("k"), "v");
  EXPECT_EQ(f.names, (std::vector<std::string>{"a", "b"}));
  // Truncate: must be a clear error, not a crash.
  FILE* fp = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(fp, nullptr);
  std::fseek(fp, 0, SEEK_END);
  long size = std::ftell(fp);
  std::fclose(fp);
  ASSERT_EQ(truncate(path.c_str(), size - 4), 0);
  EXPECT_THROW(read_safetensors(path), Error);
}

TEST(Safetensors, MisalignedTensorsAreCopiedToAlignedMemory) {
  // A 3-byte bool tensor first puts the following f32 tensor at an odd offset.
  std::string path = ::testing::TempDir() + "/misaligned.safetensors";
  Tensor flags = Tensor::from_vector<bool>({3}, {true, false, true});
  Tensor values = Tensor::from_vector<float>({2}, {1.5f, -2.0f});
  write_safetensors(path, {{"flags", flags}, {"values", values}});
  TensorFile f = read_safetensors(path);
  const Tensor& v = f.at("values");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.raw()) % alignof(float), 0u);
  EXPECT_TRUE(v.identical(values));
  EXPECT_TRUE(f.at("flags").identical(flags));
}
