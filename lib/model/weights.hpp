// The weights of a Llama model, read from a GGUF file and dequantized to fp32 at load time.
//
// GGUF stores a [out, in] matrix with ggml's dims {in, out} (fastest first); we keep the
// row-major shape [out, in] so that a linear layer is y = x·Wᵀ. The file used by the course
// ships Q4_1/Q8_0 weights: dequantized to fp32 they are the "full-precision reference" that
// lossy schemes are measured against (the original bf16 checkpoint is not what we have).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/config.hpp"
#include "model/embedding.hpp"
#include "model/linear.hpp"
#include "tensor/tensor.hpp"

namespace infer {
namespace gguf { class GgufFile; }

struct LayerWeights {
  Tensor attn_norm;                // [d]
  std::unique_ptr<Linear> wq;      // [H·D, d]
  std::unique_ptr<Linear> wk;      // [H_kv·D, d]
  std::unique_ptr<Linear> wv;      // [H_kv·D, d]
  std::unique_ptr<Linear> wo;      // [d, H·D]
  Tensor ffn_norm;                 // [d]
  std::unique_ptr<Linear> w_gate;  // [F, d]
  std::unique_ptr<Linear> w_up;    // [F, d]
  std::unique_ptr<Linear> w_down;  // [d, F]

  // The seven matrices, in the order a forward pass multiplies them.
  std::array<const Linear*, 7> linears() const {
    return {wq.get(), wk.get(), wv.get(), wo.get(), w_gate.get(), w_up.get(), w_down.get()};
  }
};

struct LlamaWeights {
  // [V, d]: a DenseEmbedding at load. Shared, not owned alone: models that reuse another's
  // weights (fewer layers, pooled heads) keep the same table.
  std::shared_ptr<const Embedding> token_embedding;
  std::vector<LayerWeights> layers;
  Tensor output_norm;               // [d]
  std::unique_ptr<Linear> output;   // [V, d]; the embedding's storage when tied

  // x[N, d] = the embedding rows of ids.
  void embed(std::span<const int32_t> ids, Tensor& x) const { token_embedding->lookup(ids, x); }

  // Bytes one single-token forward pass reads: every linear layer, the norms and one row of
  // the embedding table.
  std::size_t bytes_per_token() const;
  // Bytes held (a tied output matrix counted once).
  std::size_t bytes_held() const;
};

struct WeightLoadOptions {
  Device device = Device::cpu();
  DType dtype = DType::f32;  // f16/bf16 matrices are a CUDA option
};

LlamaWeights load_weights(const gguf::GgufFile& file, const LlamaConfig& config,
                          const WeightLoadOptions& options);

}  // namespace infer
