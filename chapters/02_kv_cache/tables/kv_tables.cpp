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

std::string ms(double seconds) { return fmt::format("{:.2f}", seconds * 1e3); }
std::string ratio(double r) { return fmt::format("{:.1f}×", r); }

void emit(const Table& table, const Context& cx) {
  table.print();
  table.append_csv(cx.o.csv_path);
}

int64_t cache_bytes_per_token(const LlamaConfig& c, int stored_heads) { return 2LL * c.n_layers * stored_heads * c.head_dim * 4; }
int64_t cache_bytes_per_token(const LlamaConfig& c) { return cache_bytes_per_token(c, c.n_heads); }

std::vector<int32_t> filler_tokens(const Tokenizer& tokenizer, int64_t n) {
  return repeated_tokens(
      tokenizer,
      "A key and a value are computed for every position of the prompt once, stored, and read again "
      "at every later step; the prompt is processed in one batched pass and each new token in a "
      "small pass of its own. ",
      n);
}

}  // namespace infer::kv
