// Exercise 05 (prefix reuse under a budget) — your answer goes here (see README.md).
#include <stdexcept>

#include "prefix_reuse.hpp"

namespace exercise {

PrefixReuse replay_prefix_cache(const std::vector<std::vector<int32_t>>& prompts, int64_t budget) {
  // A tree of positions: each node one token, its children by their next token (std::map), its
  // parent, and when it was last used. For each prompt: walk down from the root as far as the
  // tokens match (how far may you go?), then add the rest of the prompt, then evict leaves —
  // which one first, and what becomes of its parent?
  (void)prompts; (void)budget;
  throw std::logic_error("exercise 05_prefix_reuse: replay_prefix_cache is not written yet");
}

}  // namespace exercise
