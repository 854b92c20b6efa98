// Element types and the 16-bit float conversions every layer needs.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace segmux {

enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i8, u8, boolean };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "bf16", "bool", ...
bool dtype_from_name(std::string_view name, DType* out);
bool dtype_is_float(DType t);

// Maps a C++ type to its DType (bool, float, double, int64_t, int32_t, int8_t, uint8_t).
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::i8;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::boolean;
};

// bf16 / f16 stored as raw uint16_t bit patterns.
inline float bf16_to_f32(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// Round to nearest even, as torch's .to(torch.bfloat16) does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}
inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

float f16_to_f32(uint16_t v);
uint16_t f32_to_f16(float f);  // round to nearest even, overflow to inf

}  // namespace segmux
