#include "core/dtype.h"

#include <cmath>

namespace segmux {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::f64:
      return 8;
    case DType::i64:
      return 8;
    case DType::i32:
      return 4;
    case DType::i8:
      return 1;
    case DType::u8:
      return 1;
    case DType::boolean:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

bool dtype_from_name(std::string_view name, DType* out) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32, DType::i8, DType::u8,
                  DType::boolean}) {
    if (dtype_name(t) == name) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {                                  // subnormal or zero in f16
    float a;
    std::memcpy(&a, &abs, 4);
    // 2^-24 is the f16 subnormal step; nearbyint rounds to even.
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t mant_round = abs + 0xfffu + ((abs >> 13) & 1u);
  return uint16_t(sign | ((mant_round - (uint32_t(127 - 15) << 23)) >> 13));
}

}  // namespace segmux
