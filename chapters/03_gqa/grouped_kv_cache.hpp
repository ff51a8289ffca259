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
// Layout: the same numbers can sit in memory in two orders (KvLayout). Position by position,
// [max_tokens, H_kv·D], is exactly the width the k and v projections produce, so storing a step
// is one row copy; but a decode step then reads each head's 64 floats out of every 192, a
// strided walk. Head by head, [H_kv, max_tokens, D], each head's keys are one contiguous stream
// that the memory system can run ahead of; storing a step writes H_kv pieces instead of one row.
// Attention gives the same bits either way (tensor/cpu_attention.hpp); the default is head by
// head, and table 7 of main.cpp times both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "02_kv_cache/kv_cache.hpp"
#include "split_heads.hpp"
#include "tensor/tensor.hpp"

namespace infer {

enum class KvLayout {
  position_major,  // [max_tokens, H_kv·D]: a row holds every head of its position
  head_major,      // [H_kv, max_tokens, D]: each head's positions one after another
};

// Chapter 02's KvCache with one change: it keeps H_kv heads per position, and stores k and v
// as they come out of the projections (in the layout asked for).
class GroupedKvCache : public KvCache {
 public:
  // the-change: begin GroupedKvCache::GroupedKvCache
  GroupedKvCache(const LlamaConfig& config, int64_t max_tokens, Device device = Device::cpu(),
                 KvLayout layout = KvLayout::head_major)
      : KvCache(config, max_tokens, device, config.n_kv_heads,
                layout == KvLayout::head_major ? Shape{config.n_kv_heads, max_tokens, config.head_dim}
                                               : Shape{max_tokens, int64_t{config.n_kv_heads} * config.head_dim}),
        layout_(layout) {}
  // the-change: end GroupedKvCache::GroupedKvCache

  KvLayout layout() const { return layout_; }

 protected:
  // the-change: begin GroupedKvCache::store
  void store(const Tensor& k, const Tensor& v, int64_t pos0, Tensor& keys, Tensor& values) override {
    if (layout_ == KvLayout::head_major) {  // [H_kv, max_tokens, D]: each head's rows into its own stream
      ops::split_heads(k, pos0, keys);
      ops::split_heads(v, pos0, values);
      return;
    }
    Tensor key_slots = keys.rows(pos0, k.dim(0)), value_slots = values.rows(pos0, v.dim(0));
    key_slots.copy_from(k);  // [T, H_kv·D]: one row copy, nothing repeated
    value_slots.copy_from(v);
  }
  // the-change: end GroupedKvCache::store

 private:
  KvLayout layout_;
};

}  // namespace infer
