// Exercise 05 (prefix reuse) — your answer goes here (see README.md).
#include <stdexcept>

#include "prefix_cache.hpp"  // chapter 05: infer::PrefixCache
#include "prefix_reuse.hpp"

namespace exercise {

PrefixReuse replay_prefix_cache(const std::vector<std::vector<int32_t>>& prompts, int block_size) {
  // One infer::PrefixCache for the whole replay. For each prompt:
  //   lookup(tokens, max_positions)  — what may max_positions be?
  //   for each new full block: its chained hash (PrefixCache::chain, from the previous block's
  //   hash or kNoPrefix), then insert(hash, block id, tokens).
  (void)prompts; (void)block_size;
  throw std::logic_error("exercise 05_prefix_reuse: replay_prefix_cache is not written yet");
}

}  // namespace exercise
