// Exercise 05 — how much prefill the prefix cache saves.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct PrefixReuse {
  int64_t positions = 0;  // prompt positions over all prompts
  int64_t reused = 0;     // of which found in the cache (not computed again)
  int64_t indexed = 0;    // full blocks the cache holds at the end
};

// Admits `prompts` one after the other the way chapter 05's paged engine uses its PrefixCache
// (blocks of `block_size` positions; an unbounded pool, so nothing is ever evicted, and blocks
// are numbered 0, 1, 2 … as they are filled): each prompt first looks up its longest cached
// prefix — leaving at least one token to compute, which its logits need — and then indexes
// every FULL block it filled itself under its chained hash.
PrefixReuse replay_prefix_cache(const std::vector<std::vector<int32_t>>& prompts, int block_size);

}  // namespace exercise
