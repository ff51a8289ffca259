// The Llama model: its shape, its weights, and the forward pass (model/llama.cpp).
//
// forward() runs the new tokens of one sequence through every layer. Where the sequence's
// earlier positions live is the KvStore's business (model/kv_store.hpp): remembering nothing,
// a cache, a paged cache — the forward pass is the same. forward_batch (model/llama_batch.cpp)
// runs the new tokens of many sequences in one pass, through the same layers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "model/weights.hpp"
#include "tensor/tensor.hpp"

namespace infer {

// Consecutive new tokens of one sequence, a part of a batched pass.
struct SequenceChunk {
  std::span<const int32_t> tokens;  // the new tokens
  int64_t pos0 = 0;                 // position of tokens[0] in its sequence
  KvStore* kv = nullptr;            // the sequence's memory of earlier positions
  bool all_logits = false;          // logits for every token (perplexity) or only the last
};

class Llama {
 public:
  Llama(LlamaConfig config, LlamaWeights weights, Device device)
      : config_(config), weights_(std::move(weights)), device_(device) {}

  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  LlamaWeights& weights() { return weights_; }  // for swapping how the linear layers are stored
  const Device& device() const { return device_; }

  // Runs tokens at positions pos0 … pos0+N-1 of one sequence, attending through `kv`. Returns
  // the logits [N, V] with all_logits, else [1, V] for the last token.
  Tensor forward(std::span<const int32_t> tokens, int64_t pos0, KvStore& kv, bool all_logits = false) const;

  // The same for many sequences in one pass: every weight is read once for all their tokens.
  // Returns logits [R, V]: for each chunk in order, one row per token when all_logits is set,
  // else one row for its last token.
  Tensor forward_batch(std::span<const SequenceChunk> chunks) const;

  // The steps both passes are made of, public for code that looks inside a pass (a study of
  // the residual stream between layers): weights().embed, then layer() for l = 0 … n_layers−1,
  // then logits() is exactly forward().
  struct Activations {  // one layer's work buffers for N tokens
    Activations(const LlamaConfig& c, int64_t n, const Device& device);
    Tensor h, q, k, v, attn, proj, gate, up;
  };
  // Transformer block l on the residual stream x [N, d], in place; token i at positions[i].
  void layer(int l, Tensor& x, Activations& a, std::span<const int32_t> positions, KvStore& kv, int64_t pos0) const;
  // The output head: the final norm and the output matrix on rows [R, d] of the stream → [R, V].
  Tensor logits(const Tensor& rows) const;

 private:
  LlamaConfig config_;
  LlamaWeights weights_;
  Device device_;
};

}  // namespace infer
