#include "kv_tables.hpp"

#include <fmt/format.h>

#include "measure/timing.hpp"

namespace infer::kv {

double time_runs(int runs, const std::function<void()>& fn) {
  if (runs > 1) return median_seconds(runs, fn);
  Stopwatch clock;
  fn();
  return clock.seconds();
}

std::vector<int32_t> filler_tokens(const Tokenizer& tokenizer, int64_t n) {
  return repeated_tokens(
      tokenizer,
      "A key and a value are computed for every position of the prompt once, stored, and read again "
      "at every later step; the prompt is processed in one batched pass and each new token in a "
      "small pass of its own. ",
      n);
}

}  // namespace infer::kv
