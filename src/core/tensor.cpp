#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace segmux {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    SEGMUX_CHECK(d >= 0, "negative dimension in shape ", shape_str(s));
    n *= d;
  }
  return n;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  auto st = std::make_shared<Storage>();
  size_t padded = (nbytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  void* p = std::aligned_alloc(64, padded);
  SEGMUX_CHECK(p != nullptr, "out of memory allocating ", nbytes, " bytes");
  std::memset(p, 0, padded);
  st->data = static_cast<std::byte*>(p);
  st->nbytes = nbytes;
  st->keepalive = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  return st;
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes, std::shared_ptr<void> owner) {
  auto st = std::make_shared<Storage>();
  st->data = static_cast<std::byte*>(data);
  st->nbytes = nbytes;
  st->keepalive = std::move(owner);
  return st;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  storage_ = Storage::allocate(nbytes());
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)), offset_(byte_offset) {
  SEGMUX_CHECK(storage_ != nullptr, "tensor view without storage");
  SEGMUX_CHECK(offset_ + nbytes() <= storage_->nbytes, "tensor view ", shape_str(shape_), " ", dtype_name(dtype_),
               " at offset ", offset_, " overruns its ", storage_->nbytes, "-byte storage");
}

Tensor Tensor::reshaped(Shape shape) const {
  SEGMUX_CHECK(shape_numel(shape) == numel(), "cannot reshape ", shape_str(shape_), " to ", shape_str(shape));
  return Tensor(dtype_, std::move(shape), storage_, offset_);
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

double Tensor::get_as_double(int64_t i) const {
  const std::byte* p = static_cast<const std::byte*>(raw()) + size_t(i) * dtype_size(dtype_);
  switch (dtype_) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::f16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return f16_to_f32(v);
    }
    case DType::bf16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_f32(v);
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i8:
      return double(*reinterpret_cast<const int8_t*>(p));
    case DType::u8:
      return double(*reinterpret_cast<const uint8_t*>(p));
    case DType::boolean:
      return *reinterpret_cast<const uint8_t*>(p) ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set_from_double(int64_t i, double v) {
  std::byte* p = static_cast<std::byte*>(raw()) + size_t(i) * dtype_size(dtype_);
  switch (dtype_) {
    case DType::f32: {
      float x = float(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::f64:
      std::memcpy(p, &v, 8);
      break;
    case DType::f16: {
      uint16_t x = f32_to_f16(float(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::bf16: {
      uint16_t x = f32_to_bf16(float(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::i64: {
      int64_t x = int64_t(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::i32: {
      int32_t x = int32_t(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::i8:
      *reinterpret_cast<int8_t*>(p) = int8_t(v);
      break;
    case DType::u8:
      *reinterpret_cast<uint8_t*>(p) = uint8_t(v);
      break;
    case DType::boolean:
      *reinterpret_cast<uint8_t*>(p) = v != 0;
      break;
  }
}

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return clone();
  Tensor out(to, shape_);
  const int64_t n = numel();
  if (dtype_ == DType::f32 && to == DType::bf16) {
    const float* s = data<float>();
    uint16_t* d = out.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(s[i]);
  } else if (dtype_ == DType::bf16 && to == DType::f32) {
    const uint16_t* s = data<uint16_t>();
    float* d = out.data<float>();
    for (int64_t i = 0; i < n; ++i) d[i] = bf16_to_f32(s[i]);
  } else if (dtype_ == DType::i64 && to == DType::i32) {
    const int64_t* s = data<int64_t>();
    int32_t* d = out.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) d[i] = int32_t(s[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out.set_from_double(i, get_as_double(i));
  }
  return out;
}

bool Tensor::identical(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  return nbytes() == 0 || std::memcmp(raw(), o.raw(), nbytes()) == 0;
}

}  // namespace segmux
