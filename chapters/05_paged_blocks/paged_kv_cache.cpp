#include "paged_kv_cache.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "03_gqa/split_heads.hpp"
#include "tensor/cpu_attention.hpp"
#include "tensor/ops.hpp"

namespace infer {

PagedKvCache::PagedKvCache(BlockPool& pool, const LlamaConfig& c, PrefixCache* prefix, PagedRead read)
    : pool_(pool),
      prefix_(prefix),
      read_(pool.device().is_cpu() ? read : PagedRead::gather),
      n_heads_(c.n_heads),
      n_kv_heads_(c.n_kv_heads),
      n_layers_(c.n_layers),
      table_(pool.block_size()) {
  if (pool.n_layers() != c.n_layers) throw std::invalid_argument("PagedKvCache: the pool was made for another model");
}

PagedKvCache::~PagedKvCache() { table_.release(pool_); }

bool PagedKvCache::reserve(int64_t n_new) {
  if (!table_.reserve(pool_, n_new, &copies_)) return false;
  forget_blocks_to_write(n_new);  // part 2: the prefix cache stops offering blocks about to change
  return true;
}

// the-change: begin PagedKvCache::attend
void PagedKvCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  const int64_t n_new = k.dim(0);
  const int B = pool_.block_size();
  if (pos0 != table_.length())
    throw std::logic_error(fmt::format("PagedKvCache: new positions start at {}, the cache holds {}", pos0, table_.length()));
  if (pos0 + n_new > table_.capacity())
    throw std::logic_error(fmt::format("PagedKvCache: positions up to {} not reserved (capacity {})", pos0 + n_new - 1,
                                       table_.capacity()));

  // Write the new rows, one run per block they fall in. Every block written here was made
  // private by reserve(); a shared one would change every holder's cache.
  for (int64_t i = 0; i < n_new;) {
    const int64_t p = pos0 + i, offset = p % B, run = std::min<int64_t>(B - offset, n_new - i);
    const int block = table_.physical_block(p);
    if (layer == 0 && pool_.refcount(block) != 1)
      throw std::logic_error(fmt::format("PagedKvCache: write into block {}, shared {} times (reserve first)", block,
                                         pool_.refcount(block)));
    Tensor key_block = pool_.keys(layer, block), value_block = pool_.values(layer, block);  // [H_kv, B, D]
    ops::split_heads(k.rows(i, run), offset, key_block);  // chapter 03's store, into the block
    ops::split_heads(v.rows(i, run), offset, value_block);
    i += run;
  }

  if (read_ == PagedRead::in_place) attend_in_place(layer, pos0, q, out);
  else attend_gathered(layer, pos0, q, out);
  if (layer == n_layers_ - 1) table_.advance(n_new);
}
// the-change: end PagedKvCache::attend

// the-change: begin PagedKvCache::attend_in_place
// The library's CPU attention kernel, told where the rows are: the blocks of the table, in
// logical order, so row j of head g is in block j / B, at row j % B of the block's head g. It is
// the kernel ops::attention runs on a contiguous cache, so the arithmetic is the same to the
// bit; only the addresses differ.
void PagedKvCache::attend_in_place(int layer, int64_t pos0, const Tensor& q, Tensor& out) const {
  const int64_t B = pool_.block_size();
  const int64_t n_blocks = (pos0 + q.dim(0) + B - 1) / B;  // the blocks holding positions 0 … pos0 + T − 1
  std::vector<const float*> key_blocks(n_blocks), value_blocks(n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int physical = table_.blocks()[b];
    key_blocks[b] = pool_.key_data(layer, physical);
    value_blocks[b] = pool_.value_data(layer, physical);
  }
  const int64_t head_dim = q.dim(1) / n_heads_;  // a block is [H_kv, B, D]: rows D apart, heads B·D apart
  const cpu::KvRows rows{key_blocks, value_blocks, B, /*row_stride=*/head_dim, /*head_stride=*/B * head_dim};
  cpu::attention(q, rows, n_heads_, n_kv_heads_, pos0, out);
}
// the-change: end PagedKvCache::attend_in_place

// The device-independent way: copy the sequence's rows out of its blocks into contiguous
// [H_kv, S, D] tensors (S = pos0 + T), head by head, then the library's attention.
void PagedKvCache::attend_gathered(int layer, int64_t pos0, const Tensor& q, Tensor& out) const {
  const int64_t n_keys = pos0 + q.dim(0), B = pool_.block_size(), D = q.dim(1) / n_heads_;
  Tensor keys({n_kv_heads_, n_keys, D}, DType::f32, pool_.device()), values({n_kv_heads_, n_keys, D}, DType::f32, pool_.device());
  // As [heads · positions, D] rows: head g's positions j0 … of the sequence, and of a block.
  Tensor key_rows = keys.reshape({n_kv_heads_ * n_keys, D}), value_rows = values.reshape({n_kv_heads_ * n_keys, D});
  for (int64_t j0 = 0; j0 < n_keys; j0 += B) {
    const int block = table_.blocks()[j0 / B];
    const int64_t in_block = std::min(B, n_keys - j0);
    const Tensor key_block = pool_.keys(layer, block).reshape({n_kv_heads_ * B, D});
    const Tensor value_block = pool_.values(layer, block).reshape({n_kv_heads_ * B, D});
    for (int64_t g = 0; g < n_kv_heads_; ++g) {
      Tensor k_to = key_rows.rows(g * n_keys + j0, in_block), v_to = value_rows.rows(g * n_keys + j0, in_block);
      k_to.copy_from(key_block.rows(g * B, in_block));
      v_to.copy_from(value_block.rows(g * B, in_block));
    }
  }
  ops::attention(q, keys, values, n_heads_, n_kv_heads_, pos0, out);
}

}  // namespace infer
