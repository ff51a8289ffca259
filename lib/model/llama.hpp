// The Llama forward pass, shared by every chapter.
//
// One call runs a batch of "chunks": consecutive new tokens of one or more sequences. A chunk
// names its sequence's KvStore, which is where the chapters differ; everything else — the
// projections, the MLP, the norms — treats the batch as one [N, d] matrix, so N tokens cost
// one matrix-matrix product per weight instead of N matrix-vector products.
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
  LlamaWeights& weights() { return weights_; }  // chapter 06 swaps the linear layers
  const Device& device() const { return device_; }

  // Runs the chunks through the model. Returns logits [R, V]: for each chunk in order, one row
  // per token when all_logits is set, else one row for its last token.
  Tensor forward(std::span<const SequenceChunk> chunks);
  // The same for a single sequence.
  Tensor forward(std::span<const int32_t> tokens, int64_t pos0, KvStore& kv, bool all_logits = false);

 private:
  LlamaConfig config_;
  LlamaWeights weights_;
  Device device_;
};

}  // namespace infer
