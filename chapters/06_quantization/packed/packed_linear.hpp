// Chapter 06, part 2, file 2: a linear layer that keeps only the packed bytes.
//
// PackedLinear is a lib/model Linear, so the forward pass does not change: it calls forward()
// as for any layer, and the layer multiplies with the kernel of its device straight from the
// packed bytes (packed_kernels.hpp). weight_bytes() is the packed size — what a decode step now
// streams — so LlamaWeights::bytes_per_token() counts the real cost of a quantized model.
//
// With tied embeddings the same packed bytes also serve the embedding lookup (PackedEmbedding,
// a lib/model Embedding): the packed output matrix is then the only copy of the embedding.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "model/embedding.hpp"
#include "model/linear.hpp"
#include "packed_kernels.hpp"
#include "tensor/tensor.hpp"

namespace infer::quant {

// `weight` ([out, in] on any device, any dtype: read as fp32 values) packed by scheme_for(format).
PackedMatrix pack_weight(const Tensor& weight, PackedFormat format);

// the-change: begin PackedLinear
class PackedLinear : public Linear {
 public:
  // Packs `weight` ([out, in] on any device, any dtype: read as fp32 values) with
  // scheme_for(format) and keeps the bytes on `device`. Activations::int8 (CPU only) rounds x to
  // int8 for decode-sized products (int8_activations.hpp).
  PackedLinear(const Tensor& weight, PackedFormat format, Device device, Activations activations = Activations::fp32);
  // Takes a matrix already packed by scheme_for(format); throws std::invalid_argument when its
  // size is not that scheme's packed size, or for int8 activations on a GPU.
  PackedLinear(const PackedMatrix& packed, PackedFormat format, Device device,
               Activations activations = Activations::fp32);
  // The same, with the bytes copied to `offset` in `buffer` (on the device the layer computes
  // on), a buffer other layers share: pack_model.cpp keeps a model's projections in one, so
  // that most of them lie on 2 MiB pages (tensor/memory.cpp). Throws std::out_of_range when the
  // bytes do not fit there.
  PackedLinear(const PackedMatrix& packed, PackedFormat format, std::shared_ptr<Storage> buffer, std::size_t offset,
               Activations activations = Activations::fp32);

  // y[N, out] = x[N, in] · Ŵᵀ with the kernel of the bytes' device; x and y on that device.
  void forward(const Tensor& x, Tensor& y) const override;
  int64_t in_features() const override { return cols_; }
  int64_t out_features() const override { return rows_; }
  std::size_t weight_bytes() const override { return size_; }
  std::string storage() const override { return storage_; }  // the scheme's name, e.g. "NF4"

  PackedFormat format() const { return format_; }
  Activations activations() const { return activations_; }
  const Device& device() const { return bytes_->device(); }
  const uint8_t* data() const { return static_cast<const uint8_t*>(bytes_->data()) + offset_; }  // on device()

 private:
  PackedFormat format_;
  Activations activations_;
  int64_t rows_ = 0, cols_ = 0;
  std::string storage_;
  std::shared_ptr<Storage> bytes_;  // this layer's packed bytes: size_ of them, from offset_
  std::size_t offset_ = 0, size_ = 0;
};
// the-change: end PackedLinear

// The embedding lookup of a tied model from the packed output matrix: x[N, d] = rows ids[i] of Ŵ,
// decoded by the kernel of the bytes' device. It shares the layer's bytes (no copy).
class PackedEmbedding : public Embedding {
 public:
  explicit PackedEmbedding(const PackedLinear& matrix) : matrix_(matrix) {}
  void lookup(std::span<const int32_t> ids, Tensor& x) const override;
  int64_t vocab_size() const override { return matrix_.out_features(); }
  int64_t width() const override { return matrix_.in_features(); }
  std::size_t bytes() const override { return matrix_.weight_bytes(); }
  bool shares_storage_with(const Linear& linear) const override;

 private:
  PackedLinear matrix_;  // a copy holds the same bytes
};

}  // namespace infer::quant
