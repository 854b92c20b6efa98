// Tensor: a dense, row-major, contiguous n-d array with shared storage.
// Storage may be owned heap memory or borrowed (an mmapped file kept alive by its owner).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace segmux {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[1,3,168,168]"
// Row-major strides of a dense tensor of this shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);

// Raw bytes plus whatever keeps them alive (an mmap, a parent buffer, ...).
struct Storage {
  std::byte* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<void> keepalive;
  static std::shared_ptr<Storage> allocate(size_t nbytes);  // 64-byte aligned, zero-filled
  static std::shared_ptr<Storage> borrow(void* data, size_t nbytes, std::shared_ptr<void> owner);
};

class Tensor {
 public:
  Tensor() = default;
  // Fresh zero-filled tensor.
  Tensor(DType dtype, Shape shape);
  // View onto existing storage at a byte offset (no copy).
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset = 0);

  template <typename T>
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>::value, shape);
    SEGMUX_CHECK(int64_t(values.size()) == t.numel(), "from_vector: ", values.size(), " values for shape ",
                 shape_str(shape));
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
    } else {
      if (!values.empty()) std::memcpy(t.raw(), values.data(), t.nbytes());  // memcpy(null, 0) is UB
    }
    return t;
  }
  template <typename T>
  static Tensor scalar(T v) {
    return from_vector<T>({}, {v});
  }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i < 0 ? i + rank() : i); }
  int rank() const { return int(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }

  void* raw() { return storage_ ? storage_->data + offset_ : nullptr; }
  const void* raw() const { return storage_ ? storage_->data + offset_ : nullptr; }
  template <typename T>
  T* data() {
    check_type<T>();
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_type<T>();
    return static_cast<const T*>(raw());
  }

  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t byte_offset() const { return offset_; }

  // Same storage, new shape with equal element count.
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  // Element-wise conversion to another dtype (float types round to nearest even).
  Tensor cast(DType to) const;
  // Value of element i converted to double / written from double (any dtype; for tests and tools).
  double get_as_double(int64_t i) const;
  void set_from_double(int64_t i, double v);
  // Bit-exact equality of dtype, shape and bytes.
  bool identical(const Tensor& other) const;

 private:
  template <typename T>
  void check_type() const {
    if constexpr (std::is_same_v<T, uint16_t>) {
      SEGMUX_CHECK(dtype_ == DType::f16 || dtype_ == DType::bf16, "tensor is ", dtype_name(dtype_),
                   ", not a 16-bit float");
    } else if constexpr (!std::is_same_v<T, std::byte> && !std::is_same_v<T, char>) {
      SEGMUX_CHECK(dtype_ == dtype_of<T>::value, "tensor is ", dtype_name(dtype_), ", accessed as ",
                   dtype_name(dtype_of<T>::value));
    }
  }
  DType dtype_ = DType::f32;
  Shape shape_;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

}  // namespace segmux
