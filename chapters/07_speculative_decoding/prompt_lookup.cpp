#include "prompt_lookup.hpp"

#include <algorithm>

namespace infer {

Draft PromptLookupDrafter::propose(std::span<const int32_t> context, int gamma) {
  Draft draft;
  const auto size = static_cast<std::ptrdiff_t>(context.size());
  for (std::ptrdiff_t n = max_ngram_; n >= min_ngram_ && gamma > 0; --n) {
    if (n >= size) continue;
    const std::span<const int32_t> tail = context.last(n);
    // The most recent earlier occurrence of the tail: start positions size-n-1 down to 0.
    for (std::ptrdiff_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(tail.begin(), tail.end(), context.begin() + start)) continue;
      const std::ptrdiff_t from = start + n;  // what followed it then
      const std::ptrdiff_t count = std::min<std::ptrdiff_t>(gamma, size - from);
      draft.tokens.assign(context.begin() + from, context.begin() + from + count);
      return draft;  // q stays empty: one-hot on each guess
    }
  }
  return draft;  // no match: this round is a plain decode step
}

}  // namespace infer
