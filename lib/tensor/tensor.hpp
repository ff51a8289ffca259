// Tensor: an n-dimensional, row-major, contiguous array of one dtype on one device.
//
// A Tensor is a view (shape, dtype, byte offset) onto a reference-counted Storage, so copying
// a Tensor or slicing rows of it shares memory instead of copying it. The last dimension is
// the fastest-varying: a weight matrix W of a linear layer y = x·Wᵀ has shape [out, in].
//
// Host code reads and writes the elements only through host<T>(), which refuses a tensor that
// lives on a GPU: device memory is touched only by that device's operations (tensor/ops.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensor/device.hpp"
#include "tensor/dtype.hpp"

namespace infer {

using Shape = std::vector<int64_t>;
std::string shape_string(const Shape& shape);  // "[3, 576]"

// A block of memory on a device, freed when the last Tensor using it goes.
class Storage {
 public:
  Storage(Device device, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  const Device& device() const { return device_; }

 private:
  Device device_;
  std::size_t bytes_;
  void* data_;
};

class Tensor {
 public:
  Tensor() = default;  // an empty tensor with no storage
  // Allocates an uninitialised tensor.
  Tensor(Shape shape, DType dtype = DType::f32, Device device = Device::cpu());

  static Tensor zeros(Shape shape, DType dtype = DType::f32, Device device = Device::cpu());
  // Copies host values into a new tensor on `device`.
  static Tensor from_vector(std::span<const float> values, Shape shape,
                            Device device = Device::cpu());

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t numel() const;
  DType dtype() const { return dtype_; }
  const Device& device() const { return device_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool defined() const { return storage_ != nullptr; }

  // Rows [begin, begin+count) of the first dimension, sharing this tensor's storage.
  Tensor rows(int64_t begin, int64_t count) const;
  Tensor row(int64_t index) const { return rows(index, 1); }
  // The same elements seen with another shape of equal element count (no copy).
  Tensor reshape(Shape shape) const;

  // A copy on another device (or a fresh copy on the same one).
  Tensor to(const Device& device) const;
  // Copies `src` (same shape and dtype, any device) into this tensor.
  void copy_from(const Tensor& src);
  void fill_zero();
  // Copies the elements to the host as floats (f16/bf16 are widened); for tests and printing.
  std::vector<float> to_vector() const;

  // Host access; throws std::logic_error if the tensor is not on the CPU or T is not its dtype.
  template <class T>
  T* host();
  template <class T>
  const T* host() const;

  // The backend's raw pointer (device memory for CUDA). For ops implementations only.
  void* raw() const;

 private:
  void check_host(DType expected) const;
  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;  // bytes from the start of the storage
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_;
};

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::f32; }
template <>
constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <>
constexpr DType dtype_of<uint16_t>() { return DType::f16; }  // f16 or bf16 bits

template <class T>
T* Tensor::host() {
  check_host(dtype_of<T>());
  return static_cast<T*>(raw());
}
template <class T>
const T* Tensor::host() const {
  check_host(dtype_of<T>());
  return static_cast<const T*>(raw());
}

}  // namespace infer
