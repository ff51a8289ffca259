// Chapter 02's tables on the two phases: prefill time per prompt token, decode time per step
// against the cache's length (and their plot), and whole requests that split the same number of
// tokens differently between prompt and answer.
#pragma once

#include <string>

#include "kv_tables.hpp"

namespace infer::kv {

// 5. prefill for prompts of P tokens, 6. decode with C tokens in the cache; the plot of both.
void prefill_decode_tables(const Context& cx, const std::string& plot_path);
// 7. Prompt-heavy and answer-heavy requests of `total` tokens: time to first token, decode, total.
void workload_table(const Context& cx, int64_t total);

}  // namespace infer::kv
