// The token embedding: row id of a [V, d] matrix E for each token id, the input of the pass.
//
// Like Linear (model/linear.hpp) it is an interface, so that how E is stored can change without
// touching the forward pass: DenseEmbedding keeps an fp32 matrix; a quantized model can read the
// rows of a packed matrix (which, with tied embeddings, is also the output layer's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "model/linear.hpp"
#include "tensor/tensor.hpp"

namespace infer {

class Embedding {
 public:
  virtual ~Embedding() = default;
  // x[N, d] = rows ids[i] of E
  virtual void lookup(std::span<const int32_t> ids, Tensor& x) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t width() const = 0;
  virtual std::size_t bytes() const = 0;  // of the whole table
  std::size_t row_bytes() const { return bytes() / static_cast<std::size_t>(vocab_size()); }
  // Whether E is the same storage as `linear`'s matrix (tied embeddings kept once), so that
  // LlamaWeights::bytes_held counts it once.
  virtual bool shares_storage_with(const Linear& linear) const = 0;
};

// E as a dense [V, d] f32 tensor; ops::embedding copies its rows.
class DenseEmbedding : public Embedding {
 public:
  explicit DenseEmbedding(Tensor table) : table_(std::move(table)) {}
  void lookup(std::span<const int32_t> ids, Tensor& x) const override;
  int64_t vocab_size() const override { return table_.dim(0); }
  int64_t width() const override { return table_.dim(1); }
  std::size_t bytes() const override { return table_.nbytes(); }
  bool shares_storage_with(const Linear& linear) const override;
  const Tensor& table() const { return table_; }

 private:
  Tensor table_;
};

}  // namespace infer
