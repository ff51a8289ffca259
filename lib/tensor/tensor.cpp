#include "tensor/tensor.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gguf/ggml_types.hpp"
#include "tensor/memory.hpp"

namespace infer {

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Storage::Storage(Device device, std::size_t bytes)
    : device_(device), bytes_(bytes), data_(device_alloc(device, bytes)) {}

Storage::~Storage() { device_free(device_, data_, bytes_); }

static int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_string(shape));
    n *= d;
  }
  return n;
}

Tensor::Tensor(Shape shape, DType dtype, Device device)
    : shape_(std::move(shape)), dtype_(dtype), device_(device) {
  storage_ = std::make_shared<Storage>(device_, nbytes());
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t(std::move(shape), dtype, device);
  t.fill_zero();
  return t;
}

Tensor Tensor::from_vector(std::span<const float> values, Shape shape, Device device) {
  Tensor t(std::move(shape), DType::f32, device);
  if (std::ssize(values) != t.numel())
    throw std::invalid_argument(fmt::format("from_vector: {} values for shape {}", values.size(),
                                            shape_string(t.shape())));
  device_copy(device, t.raw(), Device::cpu(), values.data(), t.nbytes());
  return t;
}

int64_t Tensor::dim(int i) const {
  const int r = rank();
  if (i < 0) i += r;
  if (i < 0 || i >= r) throw std::out_of_range(fmt::format("dim {} of a rank-{} tensor", i, r));
  return shape_[i];
}

int64_t Tensor::numel() const { return element_count(shape_); }

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  if (rank() == 0 || begin < 0 || count < 0 || begin + count > shape_[0])
    throw std::out_of_range(
        fmt::format("rows({}, {}) of a tensor of shape {}", begin, count, shape_string(shape_)));
  Tensor view = *this;
  const int64_t row_elements = shape_[0] == 0 ? 0 : numel() / shape_[0];
  view.offset_ += static_cast<std::size_t>(begin * row_elements) * dtype_size(dtype_);
  view.shape_[0] = count;
  return view;
}

Tensor Tensor::reshape(Shape shape) const {
  if (element_count(shape) != numel())
    throw std::invalid_argument(fmt::format("cannot reshape {} to {}", shape_string(shape_),
                                            shape_string(shape)));
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::to(const Device& device) const {
  Tensor t(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_ || src.dtype_ != dtype_)
    throw std::invalid_argument(fmt::format("copy_from: {} {} into {} {}", dtype_name(src.dtype_),
                                            shape_string(src.shape_), dtype_name(dtype_),
                                            shape_string(shape_)));
  device_copy(device_, raw(), src.device_, src.raw(), nbytes());
}

void Tensor::fill_zero() { device_memset_zero(device_, raw(), nbytes()); }

std::vector<float> Tensor::to_vector() const {
  Tensor host_copy = device_.is_cpu() ? *this : to(Device::cpu());
  std::vector<float> out(numel());
  switch (dtype_) {
    case DType::f32:
      std::memcpy(out.data(), host_copy.raw(), nbytes());
      break;
    case DType::i32: {
      const auto* p = static_cast<const int32_t*>(host_copy.raw());
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(p[i]);
      break;
    }
    case DType::f16:
    case DType::bf16: {
      const auto* p = static_cast<const uint16_t*>(host_copy.raw());
      for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = dtype_ == DType::f16 ? gguf::fp16_to_fp32(p[i]) : gguf::bf16_to_fp32(p[i]);
      break;
    }
  }
  return out;
}

void* Tensor::raw() const {
  if (!storage_) throw std::logic_error("use of an empty tensor");
  return static_cast<char*>(storage_->data()) + offset_;
}

void Tensor::check_host(DType expected) const {
  if (!device_.is_cpu())
    throw std::logic_error("host access to a tensor on " + device_.name() +
                           " (copy it with .to(Device::cpu()) first)");
  const bool half_bits = expected == DType::f16 && dtype_ == DType::bf16;
  if (dtype_ != expected && !half_bits)
    throw std::logic_error(fmt::format("host<{}>() on a {} tensor", dtype_name(expected),
                                       dtype_name(dtype_)));
}

}  // namespace infer
