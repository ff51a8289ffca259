// Exercise 05 — a token-granular prefix cache under a memory budget: what it reuses, what it
// evicts.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct PrefixReuse {
  int64_t positions = 0;  // prompt positions over all prompts
  int64_t reused = 0;     // of which found in the cache (not computed again)
  int64_t cached = 0;     // positions the cache holds at the end
};

// A prefix cache that keeps the K/V of single positions (SGLang's RadixAttention, one node per
// token), not of full blocks: a set of cached positions, each named by the tokens from the start
// up to it, that is closed under prefixes — a tree whose root is the empty prefix, in which a
// node's ancestors are the positions before it. At most `budget` positions are cached.
// The prompts are served one after another; prompt i (i = 1, 2, …) at time i:
//   1. match:  its longest cached prefix, at most P − 1 positions (the last token is always
//              computed, for the logits of the next one); `reused` counts them
//   2. insert: afterwards every position of the prompt is cached (the ones not matched have just
//              been computed) — and every position on its path was used at time i
//   3. evict:  while more than `budget` positions are cached, drop the least recently used LEAF
//              (a position no cached position extends; dropping an inner one would strand the
//              positions after it). Two leaves never share a time (each time's positions lie on
//              one path, which has one leaf).
// Throws std::invalid_argument if budget < 0.
PrefixReuse replay_prefix_cache(const std::vector<std::vector<int32_t>>& prompts, int64_t budget);

}  // namespace exercise
