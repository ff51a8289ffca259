#include "kv_cache.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "repeat_heads.hpp"
#include "tensor/ops.hpp"

namespace infer {

KvCache::KvCache(const LlamaConfig& c, int64_t max_tokens, Device device, int stored_heads, Shape layer_shape)
    : n_heads_(c.n_heads), n_kv_heads_(c.n_kv_heads), stored_heads_(stored_heads), max_tokens_(max_tokens) {
  if (max_tokens <= 0 || max_tokens > c.context_length)
    throw std::invalid_argument(fmt::format("KvCache: capacity {} outside 1…{} (the context length)",
                                            max_tokens, c.context_length));
  for (int l = 0; l < c.n_layers; ++l) {
    keys_.emplace_back(layer_shape, DType::f32, device);
    values_.emplace_back(layer_shape, DType::f32, device);
  }
}

std::size_t KvCache::bytes() const {
  std::size_t total = 0;
  for (std::size_t l = 0; l < keys_.size(); ++l) total += keys_[l].nbytes() + values_[l].nbytes();
  return total;
}

void KvCache::truncate(int64_t length) {
  if (length < 0 || length > length_)
    throw std::out_of_range(fmt::format("KvCache: cannot truncate {} positions to {}", length_, length));
  length_ = length;
}

// the-change: begin KvCache::store
void KvCache::store(const Tensor& k, const Tensor& v, int64_t pos0, Tensor& keys, Tensor& values) {
  // Each key/value head copied once per query head that reads it, into rows pos0 … pos0 + T − 1.
  const int group = n_heads_ / n_kv_heads_;
  Tensor key_slots = keys.rows(pos0, k.dim(0)), value_slots = values.rows(pos0, v.dim(0));
  ops::repeat_heads(k, n_kv_heads_, group, key_slots);
  ops::repeat_heads(v, n_kv_heads_, group, value_slots);
}
// the-change: end KvCache::store

// the-change: begin KvCache::attend
void KvCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v,
                     Tensor& out) {
  const int64_t n_new = k.dim(0);
  if (pos0 + n_new > max_tokens_)
    throw std::out_of_range(fmt::format("KvCache: positions up to {} do not fit a capacity of {}",
                                        pos0 + n_new - 1, max_tokens_));
  store(k, v, pos0, keys_[layer], values_[layer]);
  // Attend over positions 0 … pos0+n_new-1 (ops::attention reads no further). Query head h
  // reads stored head h / (H / stored_heads): its own copy here, the shared head in chapter 03.
  ops::attention(q, keys_[layer], values_[layer], n_heads_, stored_heads_, pos0, out);
  if (layer == std::ssize(keys_) - 1) length_ = pos0 + n_new;
}
// the-change: end KvCache::attend

}  // namespace infer
