// Exercise 05 (prefix reuse) — reference solution.
#include <span>

#include "prefix_cache.hpp"  // chapter 05
#include "prefix_reuse.hpp"

namespace exercise {

PrefixReuse replay_prefix_cache(const std::vector<std::vector<int32_t>>& prompts, int block_size) {
  infer::PrefixCache cache(block_size);
  const auto B = static_cast<int64_t>(block_size);
  int next_block = 0;  // an unbounded pool: block ids in the order they are filled
  PrefixReuse out;
  for (const std::vector<int32_t>& prompt : prompts) {
    const std::span<const int32_t> tokens(prompt);
    const auto P = std::ssize(tokens);
    out.positions += P;
    // At most P − 1 positions from the cache: the last token must run, for the next token's logits.
    const infer::PrefixCache::Hit hit = cache.lookup(tokens, P - 1);
    const int64_t cached_blocks = std::ssize(hit.blocks);
    out.reused += cached_blocks * B;
    // Index the full blocks this prompt computed, each hash chained on the one before it, so a
    // block is found only after the very same prefix.
    uint64_t hash = hit.hashes.empty() ? infer::PrefixCache::kNoPrefix : hit.hashes.back();
    for (int64_t b = cached_blocks; (b + 1) * B <= P; ++b) {
      const auto block = tokens.subspan(static_cast<std::size_t>(b * B), static_cast<std::size_t>(B));
      hash = infer::PrefixCache::chain(hash, block);
      cache.insert(hash, next_block++, block);
    }
  }
  out.indexed = std::ssize(cache);
  return out;
}

}  // namespace exercise
