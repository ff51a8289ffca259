// A linear layer y = x·Wᵀ, the operation that holds almost all of a model's weights.
//
// It is an interface so that how the weights are stored can change without touching the forward
// pass: DenseLinear keeps them as a plain matrix; a quantized layer can multiply straight from
// packed 8- or 4-bit codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/tensor.hpp"

namespace infer {

class Linear {
 public:
  virtual ~Linear() = default;
  // y[N, out] = x[N, in] · Wᵀ
  virtual void forward(const Tensor& x, Tensor& y) const = 0;
  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  // Bytes of weights one forward call reads: what a memory-bound decode step streams.
  virtual std::size_t weight_bytes() const = 0;
  virtual std::string storage() const = 0;  // e.g. "f32", "int8 per-row"
};

// Weights as a dense [out, in] matrix of f32 (or f16/bf16 on CUDA).
// the-change: begin DenseLinear
class DenseLinear : public Linear {
 public:
  explicit DenseLinear(Tensor weight) : weight_(std::move(weight)) {}
  void forward(const Tensor& x, Tensor& y) const override;
  int64_t in_features() const override { return weight_.dim(1); }
  int64_t out_features() const override { return weight_.dim(0); }
  std::size_t weight_bytes() const override { return weight_.nbytes(); }
  std::string storage() const override { return std::string(dtype_name(weight_.dtype())); }
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};
// the-change: end DenseLinear

}  // namespace infer
