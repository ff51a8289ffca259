// Chapter 05's layer, part 2 (sharing): prefix reuse — a new request takes the full blocks another
// sequence already filled with the same tokens, and computes only the rest.
//
// prefix_cache.hpp finds them (a chained hash per full block); this file is how part 1's pool,
// tables, caches and engine take them and keep the index honest:
//
//   PagedEngine::lookup             admit and can_admit ask the prefix cache for the longest
//                                   cached run of full blocks (the last token is always computed)
//   BlockTable::adopt               admit's empty table takes those blocks as they are: a block
//                                   some sequence still holds is retained (fork.cpp), a block
//                                   whose sequences have ended is reclaimed from the free list
//   BlockPool::reclaim              a FREE block taken back without clearing it (refcount 0 → 1)
//   PagedEngine::index_full_blocks  after each step, every block that became full enters the
//                                   prefix cache under its chained hash
//   PagedKvCache::forget_blocks_to_write
//                                   a block about to be written in place leaves the index, as
//                                   does (the engine's reuse listener on the pool) a free block
//                                   the pool hands out again
//
// The declarations are in the part-1 headers, in their "Part 2" sections.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "block_pool.hpp"
#include "block_table.hpp"
#include "paged_engine.hpp"
#include "paged_kv_cache.hpp"
#include "prefix_cache.hpp"

namespace infer {

void BlockPool::reclaim(int block) {
  check_index(block);
  int& rc = refcount_[block];
  if (rc != 0) throw std::logic_error(fmt::format("BlockPool: reclaim of block {}, which is held {} times", block, rc));
  // O(free blocks): a prefix hit happens once per admitted request, not per token.
  const auto it = std::find(free_.begin(), free_.end(), block);
  if (it == free_.end()) throw std::logic_error(fmt::format("BlockPool: free block {} is not on the free list", block));
  free_.erase(it);
  rc = 1;
}

void BlockTable::adopt(BlockPool& pool, std::span<const int> blocks, int64_t positions) {
  if (!blocks_.empty()) throw std::logic_error("BlockTable: adopt into a table that holds blocks");
  if (positions != std::ssize(blocks) * block_size_)
    throw std::logic_error("BlockTable: adopt takes whole blocks");
  for (int b : blocks) {
    if (pool.is_free(b)) pool.reclaim(b);
    else pool.retain(b);
    blocks_.push_back(b);
  }
  length_ = positions;
}

void PagedKvCache::forget_blocks_to_write(int64_t n_new) {
  // The blocks about to be written are ours alone (reserve made them so). One of them may still
  // be indexed by the prefix cache as a full block (a sample forked before position p writes a
  // different token at p than the sequence that filled the block): its contents are about to
  // change, so forget it.
  if (prefix_ == nullptr || n_new <= 0) return;
  const int B = pool_.block_size();
  for (int64_t i = table_.length() / B; i <= (table_.length() + n_new - 1) / B; ++i)
    prefix_->forget(table_.blocks()[i]);
}

PrefixCache::Hit PagedEngine::lookup(std::span<const int32_t> tokens) const {
  if (!options_.prefix_caching) return {};
  // At least the last token is computed: its logits give the next token.
  return prefix_.lookup(tokens, std::ssize(tokens) - 1);
}

void PagedEngine::index_full_blocks(Sequence& s) {
  if (!options_.prefix_caching) return;
  const int B = pool_.block_size();
  while (std::ssize(s.hashes) < s.cache->length() / B) {
    const int64_t i = std::ssize(s.hashes);  // the next block to index
    const std::span<const int32_t> block(s.tokens.data() + i * B, B);
    const uint64_t h = PrefixCache::chain(i == 0 ? PrefixCache::kNoPrefix : s.hashes.back(), block);
    prefix_.insert(h, s.cache->table().blocks()[i], block);
    s.hashes.push_back(h);
  }
}

}  // namespace infer
