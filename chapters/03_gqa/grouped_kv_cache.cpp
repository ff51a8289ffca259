#include "grouped_kv_cache.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer {

GroupedKvCache::GroupedKvCache(const LlamaConfig& c, int64_t max_tokens, Device device)
    : n_heads_(c.n_heads), n_kv_heads_(c.n_kv_heads), max_tokens_(max_tokens) {
  if (max_tokens <= 0 || max_tokens > c.context_length)
    throw std::invalid_argument(fmt::format("GroupedKvCache: capacity {} outside 1…{} (the context length)",
                                            max_tokens, c.context_length));
  for (int l = 0; l < c.n_layers; ++l) {
    keys_.emplace_back(Shape{max_tokens, c.kv_width()}, DType::f32, device);
    values_.emplace_back(Shape{max_tokens, c.kv_width()}, DType::f32, device);
  }
}

std::size_t GroupedKvCache::bytes() const {
  std::size_t total = 0;
  for (std::size_t l = 0; l < keys_.size(); ++l) total += keys_[l].nbytes() + values_[l].nbytes();
  return total;
}

void GroupedKvCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) {
  const int64_t n_new = k.dim(0);
  if (pos0 + n_new > max_tokens_)
    throw std::out_of_range(fmt::format("GroupedKvCache: positions up to {} do not fit a capacity of {}",
                                        pos0 + n_new - 1, max_tokens_));
  Tensor& keys = keys_[static_cast<std::size_t>(layer)];
  Tensor& values = values_[static_cast<std::size_t>(layer)];
  // Store the new positions as they come: H_kv heads per row, nothing repeated.
  keys.rows(pos0, n_new).copy_from(k);
  values.rows(pos0, n_new).copy_from(v);
  // Attend over positions 0 … pos0+n_new-1; ops::attention maps query head h to key/value head
  // h / (H / H_kv) by index.
  ops::attention(q, keys.rows(0, pos0 + n_new), values.rows(0, pos0 + n_new), n_heads_, n_kv_heads_, pos0, out);
  if (layer == static_cast<int>(keys_.size()) - 1) length_ = pos0 + n_new;
}

}  // namespace infer
