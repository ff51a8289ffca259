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
#include "02_kv_cache/kv_cache.hpp"
#include "tensor/tensor.hpp"

namespace infer {

// Chapter 02's KvCache with one change: it keeps H_kv heads per position, and stores k and v
// as they come out of the projections.
class GroupedKvCache : public KvCache {
 public:
  // the-change: begin GroupedKvCache::GroupedKvCache
  GroupedKvCache(const LlamaConfig& config, int64_t max_tokens, Device device = Device::cpu())
      : KvCache(config, max_tokens, device, config.n_kv_heads) {}
  // the-change: end GroupedKvCache::GroupedKvCache

 protected:
  // the-change: begin GroupedKvCache::store
  void store(const Tensor& k, const Tensor& v, Tensor& key_slots, Tensor& value_slots) override {
    key_slots.copy_from(k);  // [T, H_kv·D]: one row copy, nothing repeated
    value_slots.copy_from(v);
  }
  // the-change: end GroupedKvCache::store
};

}  // namespace infer
