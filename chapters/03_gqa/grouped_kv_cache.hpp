// Chapter 03's layer, part 1: the grouped KV cache.
//
// The default model has H = 9 query heads but only H_kv = 3 key/value heads: query heads
// 0–2 read key/value head 0, heads 3–5 head 1, heads 6–8 head 2 (grouped-query attention,
// GQA). Chapter 02's KvCache copied each key/value head into the slot of every query head that
// reads it. GroupedKvCache stores each key/value head once and lets attention find the shared
// head by index — query head h reads key/value head h / (H / H_kv) — so nothing is repeated
// in memory and the cache is H / H_kv times smaller, with the same numbers going into the same
// arithmetic.
//
// Layout: keys[l] and values[l] are [max_tokens, H_kv·D], exactly the width the model's
// k and v projections produce, so storing a step is one row copy per tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "tensor/tensor.hpp"

namespace infer {

class GroupedKvCache : public KvStore {
 public:
  GroupedKvCache(const LlamaConfig& config, int64_t max_tokens, Device device = Device::cpu());

  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v,
              Tensor& out) override;

  int64_t max_tokens() const { return max_tokens_; }
  int64_t length() const { return length_; }  // positions stored so far
  // Bytes allocated for keys and values: 2 × layers × H_kv × D × 4 bytes per token of capacity.
  std::size_t bytes() const;
  void clear() { length_ = 0; }

 private:
  int n_heads_, n_kv_heads_;
  int64_t max_tokens_;
  int64_t length_ = 0;
  std::vector<Tensor> keys_;    // per layer [max_tokens, H_kv·D]
  std::vector<Tensor> values_;  // per layer [max_tokens, H_kv·D]
};

// Bytes per token of a K/V cache from the formula: 2 (keys and values) × layers × heads stored
// × head dimension × bytes per element. Chapter 02 stores H heads, this chapter H_kv.
inline std::size_t kv_bytes_per_token(int n_layers, int heads_stored, int head_dim, int bytes_per_element) {
  return std::size_t{2} * static_cast<std::size_t>(n_layers) * static_cast<std::size_t>(heads_stored) *
         static_cast<std::size_t>(head_dim) * static_cast<std::size_t>(bytes_per_element);
}

}  // namespace infer
