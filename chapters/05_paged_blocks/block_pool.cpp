#include "block_pool.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "measure/table.hpp"

namespace infer {

BlockPool::BlockPool(const LlamaConfig& c, int block_size, std::size_t budget_bytes, Device device)
    : block_size_(block_size), device_(device) {
  if (block_size < 1) throw std::invalid_argument(fmt::format("BlockPool: block size {} (at least 1 position)", block_size));
  bytes_per_block_ = block_size * c.kv_bytes_per_token(sizeof(float));
  const int64_t n = budget_bytes / bytes_per_block_;  // blocks that fit
  if (n == 0)
    throw std::invalid_argument(fmt::format("BlockPool: a budget of {} holds no block of {} positions ({})",
                                            format_bytes(static_cast<double>(budget_bytes)), block_size,
                                            format_bytes(static_cast<double>(bytes_per_block_))));
  const Shape shape{n * c.n_kv_heads, block_size, c.head_dim};
  for (int l = 0; l < c.n_layers; ++l) {
    keys_.emplace_back(shape, DType::f32, device);
    values_.emplace_back(shape, DType::f32, device);
  }
  n_kv_heads_ = c.n_kv_heads;
  refcount_.assign(n, 0);
  for (int b = 0; b < n; ++b) free_.push_back(b);
}

void BlockPool::check_index(int block) const {
  if (block < 0 || block >= num_blocks())
    throw std::out_of_range(fmt::format("BlockPool: block {} outside 0…{}", block, num_blocks() - 1));
}

std::optional<int> BlockPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int b = free_.front();
  free_.pop_front();
  refcount_[b] = 1;
  if (on_reuse_) on_reuse_(b);  // part 2: the prefix cache forgets the block's old contents
  return b;
}

void BlockPool::release(int block) {
  check_index(block);
  int& rc = refcount_[block];
  if (rc == 0) throw std::logic_error(fmt::format("BlockPool: double free of block {}", block));
  if (--rc == 0) free_.push_back(block);
}

int BlockPool::refcount(int block) const {
  check_index(block);
  return refcount_[block];
}

void BlockPool::check_invariants() const {
  std::vector<int> on_list(refcount_.size(), 0);
  for (int b : free_) {
    if (b < 0 || b >= num_blocks()) throw std::logic_error(fmt::format("BlockPool: free list holds block {}, outside the pool", b));
    if (++on_list[b] > 1) throw std::logic_error(fmt::format("BlockPool: block {} is on the free list twice", b));
  }
  for (std::size_t b = 0; b < refcount_.size(); ++b) {
    const int rc = refcount_[b];
    if (rc < 0) throw std::logic_error(fmt::format("BlockPool: block {} has refcount {}", b, rc));
    if (rc > 0 && on_list[b] != 0) throw std::logic_error(fmt::format("BlockPool: block {} is both free and used (refcount {})", b, rc));
    if (rc == 0 && on_list[b] == 0) throw std::logic_error(fmt::format("BlockPool: block {} is neither free nor used (lost)", b));
  }
}

Tensor BlockPool::keys(int layer, int block) const {
  check_index(block);
  return keys_.at(layer).rows(int64_t{block} * n_kv_heads_, n_kv_heads_);
}

Tensor BlockPool::values(int layer, int block) const {
  check_index(block);
  return values_.at(layer).rows(int64_t{block} * n_kv_heads_, n_kv_heads_);
}

const float* BlockPool::key_data(int layer, int block) const {
  const Tensor& k = keys_[layer];
  return k.host<float>() + int64_t{block} * n_kv_heads_ * block_size_ * k.dim(2);
}

const float* BlockPool::value_data(int layer, int block) const {
  const Tensor& v = values_[layer];
  return v.host<float>() + int64_t{block} * n_kv_heads_ * block_size_ * v.dim(2);
}

// Part 2's retain, reclaim and copy_block are in sharing/ (fork.cpp, prefix_reuse.cpp).

}  // namespace infer
