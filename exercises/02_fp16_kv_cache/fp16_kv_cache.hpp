// Exercise 02 — a KV cache that stores keys and values in half precision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "tensor/tensor.hpp"

namespace exercise {

// Chapter 03's grouped cache (H_kv heads per position) with 16-bit elements: every key and
// value is rounded to IEEE fp16 when it is stored and widened back to fp32 for attention.
// Half the bytes of GroupedKvCache; the first lossy step of the course.
class Fp16KvCache : public infer::KvStore {
 public:
  Fp16KvCache(const infer::LlamaConfig& config, int64_t max_tokens)
      : n_heads_(config.n_heads), n_kv_heads_(config.n_kv_heads), width_(config.kv_width()), max_tokens_(max_tokens),
        keys_(static_cast<std::size_t>(config.n_layers), std::vector<uint16_t>(static_cast<std::size_t>(max_tokens * width_))),
        values_(keys_) {}

  // YOUR PART: store k, v [T, H_kv·D] as fp16 at positions pos0 … pos0+T−1 of layer `layer`,
  // then write into out [T, H·D] the causal attention of q [T, H·D] over positions
  // 0 … pos0+T−1, read back from the fp16 store. Throws std::out_of_range past max_tokens.
  void attend(int layer, int64_t pos0, const infer::Tensor& q, const infer::Tensor& k, const infer::Tensor& v,
              infer::Tensor& out) override;

  // Bytes held for keys and values: 2 × layers × max_tokens × H_kv·D × 2 bytes.
  std::size_t bytes() const { return 2 * keys_.size() * keys_.front().size() * sizeof(uint16_t); }

 private:
  int n_heads_, n_kv_heads_;
  int64_t width_;       // H_kv·D elements per position
  int64_t max_tokens_;
  std::vector<std::vector<uint16_t>> keys_, values_;  // per layer [max_tokens, H_kv·D] fp16 bits
};

}  // namespace exercise
