// Chapter 05's layer, part 2 (sharing): the prefix cache — finding blocks another sequence
// already filled. Read it after part 1 (the chapter directory: block_pool, block_table,
// paged_kv_cache, paged_engine; admission/paged_scheduler); the rest of part 2 is in this folder:
// prefix_reuse.cpp (how a hit is taken: adopt, reclaim, indexing full blocks) and fork.cpp
// (samples of one prompt: share, retain, copy-on-write, fork).
//
// The keys and values of position p depend on tokens 0 … p only. So a FULL block's contents are
// fixed by its own B tokens and every token before it, and two prompts that start with the same
// blocks of tokens (a shared system prompt, a chat's earlier turns) can share those blocks
// instead of computing them again. A full block is named by a chained hash:
//
//   h_0 = hash(seed,    tokens 0 … B−1)
//   h_i = hash(h_{i−1}, tokens i·B … i·B+B−1)        (so h_i covers the whole prefix up to block i)
//
// The cache maps h_i → the physical block that holds it, and keeps the block's tokens so that a
// lookup compares them too: a hash collision can cost a miss, never a wrong answer.
//
// Lifetime (our choice, as nano-vllm and vLLM do): when the last sequence holding a cached block
// ends, the block goes back to the pool's free list but stays indexed here. A later prompt with
// the same prefix reclaims it for free; the pool hands free blocks out oldest-freed first, and
// the moment it hands out an indexed block the pool's reuse listener makes the cache forget it.
// So cached prefixes cost no memory that anyone else needs.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace infer {

class PrefixCache {
 public:
  explicit PrefixCache(int block_size) : block_size_(block_size) {}

  // The chained hash of one full block of tokens after a prefix whose hash is `prefix`
  // (kNoPrefix for the first block).
  static constexpr uint64_t kNoPrefix = 0x9e3779b97f4a7c15ULL;
  static uint64_t chain(uint64_t prefix, std::span<const int32_t> block_tokens);

  struct Hit {
    std::vector<int> blocks;     // physical blocks of the cached prefix, in order
    std::vector<uint64_t> hashes;  // their chained hashes
    int64_t positions() const { return std::ssize(blocks); }  // × B positions
  };
  // The longest run of cached full blocks at the start of `tokens`, covering at most
  // `max_positions` positions (a prompt must keep at least one token to compute, for its logits).
  Hit lookup(std::span<const int32_t> tokens, int64_t max_positions) const;

  // Block `block` now holds the full block of tokens `block_tokens` whose chained hash is
  // `hash`. A hash already indexed keeps its first block.
  void insert(uint64_t hash, int block, std::span<const int32_t> block_tokens);
  // `block` is about to be overwritten: drop it from the index (no-op if not indexed).
  void forget(int block);
  bool contains_block(int block) const { return hash_of_.count(block) != 0; }

  std::size_t size() const { return by_hash_.size(); }
  int block_size() const { return block_size_; }

 private:
  struct Entry {
    int block;
    std::vector<int32_t> tokens;
  };
  int block_size_;
  std::unordered_map<uint64_t, Entry> by_hash_;
  std::unordered_map<int, uint64_t> hash_of_;  // block → hash, to forget a block
};

}  // namespace infer
