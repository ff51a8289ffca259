// The CUDA backend's entry points, called by the device dispatch in memory.cpp, device.cpp and
// ops.cpp. Implemented in cuda/*.cu when the library is built with INFER_CUDA; otherwise
// tensor/cuda_absent.cpp answers every call with "built without CUDA support".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tensor/device.hpp"

namespace infer {
class Tensor;
}

namespace infer::cuda {

std::string unavailable_reason();  // empty when a CUDA device is usable

void* alloc(const Device& device, std::size_t bytes);
void free(const Device& device, void* ptr);
void copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
          std::size_t bytes);
void memset_zero(const Device& device, void* ptr, std::size_t bytes);
void synchronize();

// Same contracts as infer::ops (tensor/ops.hpp); operands already checked.
void matmul_t(const Tensor& x, const Tensor& w, Tensor& y);
void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out);
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y);
void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta);
void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out);
void add_inplace(Tensor& x, const Tensor& y);
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
               int64_t pos0, Tensor& out);
int32_t argmax(const Tensor& row);

}  // namespace infer::cuda
