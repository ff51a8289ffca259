#include "tree_kv_cache.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "tensor/cpu_attention.hpp"
#include "tensor/ops.hpp"

namespace infer {

TreeKvCache::TreeKvCache(const LlamaConfig& c, int64_t max_tokens)
    : n_heads_(c.n_heads), n_kv_heads_(c.n_kv_heads), max_tokens_(max_tokens) {
  if (max_tokens <= 0 || max_tokens > c.context_length)
    throw std::invalid_argument(fmt::format("TreeKvCache: capacity {} outside 1…{}", max_tokens, c.context_length));
  for (int l = 0; l < c.n_layers; ++l) {
    keys_.emplace_back(Shape{max_tokens, c.kv_width()}, DType::f32, Device::cpu());
    values_.emplace_back(Shape{max_tokens, c.kv_width()}, DType::f32, Device::cpu());
  }
}

void TreeKvCache::set_tree(const TokenTree* tree, int64_t base) {
  if (tree != nullptr && (base < 0 || base > length_))
    throw std::out_of_range(fmt::format("TreeKvCache: a tree at slot {} of {}", base, length_));
  tree_ = tree;
  base_ = base;
}

void TreeKvCache::truncate(int64_t length) {
  if (length < 0 || length > length_)
    throw std::out_of_range(fmt::format("TreeKvCache: cannot truncate {} positions to {}", length_, length));
  length_ = length;
}

void TreeKvCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  const int64_t n_new = k.dim(0);
  if (pos0 + n_new > max_tokens_)
    throw std::out_of_range(fmt::format("TreeKvCache: slots up to {} do not fit a capacity of {}", pos0 + n_new - 1, max_tokens_));
  Tensor key_slots = keys_[layer].rows(pos0, n_new), value_slots = values_[layer].rows(pos0, n_new);
  key_slots.copy_from(k);  // as chapter 03: the new rows at their slots, each key/value head once
  value_slots.copy_from(v);
  if (tree_ == nullptr)
    ops::attention(q, keys_[layer].rows(0, pos0 + n_new), values_[layer].rows(0, pos0 + n_new), n_heads_, n_kv_heads_, pos0, out);
  else
    attend_tree(layer, pos0, q, out);
  if (layer == std::ssize(keys_) - 1) length_ = std::max(length_, pos0 + n_new);
}

// the-change: begin TreeKvCache::attend_tree
// The tree mask: the query of node j reads the rows before the root, then its ancestors' slots
// and its own, and nothing else — as if its draft sequence were the only one in the cache.
void TreeKvCache::attend_tree(int layer, int64_t pos0, const Tensor& q, Tensor& out) const {
  const float* keys = keys_[layer].host<float>();
  const float* values = values_[layer].host<float>();
  const int64_t width = keys_[layer].dim(1);  // H_kv·D floats per row
  std::vector<const float*> key_rows, value_rows;
  for (int64_t t = 0; t < q.dim(0); ++t) {
    const int node = static_cast<int>(pos0 + t - base_);
    if (node < 0 || node >= tree_->size())
      throw std::out_of_range(fmt::format("TreeKvCache: slot {} holds no node of the tree", pos0 + t));
    key_rows.clear();
    value_rows.clear();
    for (int64_t s = 0; s < base_; ++s) {  // the accepted text before the root: every node sees it
      key_rows.push_back(keys + s * width);
      value_rows.push_back(values + s * width);
    }
    for (const int a : tree_->path_to(node)) {  // the root, …, the parent, the node: row `a` of its mask
      key_rows.push_back(keys + (base_ + a) * width);
      value_rows.push_back(values + (base_ + a) * width);
    }
    // One row per block: the kernel reads row s of the list at key_rows[s]. Causal at the last
    // row of the list, position base + depth(node): the query sees the whole list.
    const cpu::KvRows rows{key_rows, value_rows, /*rows_per_block=*/1, width, /*head_stride=*/width / n_kv_heads_};
    Tensor out_row = out.rows(t, 1);
    cpu::attention(q.rows(t, 1), rows, n_heads_, n_kv_heads_, std::ssize(key_rows) - 1, out_row);
  }
}
// the-change: end TreeKvCache::attend_tree

void TreeKvCache::keep_path(std::span<const int> path) {
  if (tree_ == nullptr || path.empty() || path.front() != 0)
    throw std::invalid_argument("TreeKvCache::keep_path: a path from the root of the current tree");
  for (std::size_t l = 0; l < keys_.size(); ++l)
    for (std::size_t i = 1; i < path.size(); ++i) {  // slot base + path[i] ≥ base + i: copying in order overwrites nothing still needed
      if (path[i] == static_cast<int>(i)) continue;  // already in place (a chain's accepted prefix)
      Tensor key_to = keys_[l].row(base_ + static_cast<int64_t>(i)), value_to = values_[l].row(base_ + static_cast<int64_t>(i));
      key_to.copy_from(keys_[l].row(base_ + path[i]));
      value_to.copy_from(values_[l].row(base_ + path[i]));
    }
  length_ = base_ + std::ssize(path);
  tree_ = nullptr;
}

}  // namespace infer
