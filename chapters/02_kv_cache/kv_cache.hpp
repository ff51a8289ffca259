// Chapter 02's layer, part 1: the KV cache.
//
// In a causal model the key and value of position j depend only on tokens 0 … j, so once
// computed they never change. KvCache keeps them: one buffer per layer for keys and one for
// values, allocated once for the longest sequence it will hold (no reallocation, no
// concatenation while generating). A step then computes k and v for its new tokens only,
// writes them at their positions, and attends over everything stored so far.
//
// Layout: keys[l] and values[l] are [max_tokens, H·D] — one slot per QUERY head. The model has
// fewer key/value heads (H_kv = 3 for 9 query heads), and here each is copied into the slots
// of the H/H_kv query heads that read it: the plain multi-head layout. Chapter 03 stores each
// key/value head once and saves the factor H/H_kv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "tensor/tensor.hpp"

namespace infer {

class KvCache : public KvStore {
 public:
  // the-change: begin KvCache::KvCache
  KvCache(const LlamaConfig& config, int64_t max_tokens, Device device = Device::cpu())
      : KvCache(config, max_tokens, device, config.n_heads, {max_tokens, int64_t{config.n_heads} * config.head_dim}) {}
  // the-change: end KvCache::KvCache

  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v,
              Tensor& out) override;

  int64_t max_tokens() const { return max_tokens_; }
  int64_t length() const { return length_; }  // positions stored so far
  // Bytes allocated for keys and values: 2 × layers × H × D × 4 bytes per token of capacity.
  std::size_t bytes() const;
  // Keeps positions 0 … length-1 and forgets the rest. Nothing is copied or freed: the next
  // step writes its keys and values over the forgotten slots, and attention only ever reads
  // positions up to the step's own.
  void truncate(int64_t length);
  void clear() { truncate(0); }

 protected:
  // stored_heads: key/value heads kept per position — H here; chapter 03's GroupedKvCache
  // keeps H_kv. layer_shape: each layer's keys (and values), [max_tokens, stored_heads·D] here;
  // chapter 03 can also keep them head by head, [H_kv, max_tokens, D].
  KvCache(const LlamaConfig& config, int64_t max_tokens, Device device, int stored_heads, Shape layer_shape);
  // Writes the keys and values k, v [T, H_kv·D] of positions pos0 … pos0 + T − 1 into one
  // layer's keys and values (of layer_shape).
  virtual void store(const Tensor& k, const Tensor& v, int64_t pos0, Tensor& keys, Tensor& values);

 private:
  int n_heads_, n_kv_heads_, stored_heads_;
  int64_t max_tokens_;
  int64_t length_ = 0;
  std::vector<Tensor> keys_;    // per layer, layer_shape
  std::vector<Tensor> values_;  // per layer, layer_shape
};

}  // namespace infer
