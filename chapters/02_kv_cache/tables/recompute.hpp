// Chapter 02's tables on what the cache saves: the demo beside chapter 01's loop, one attention
// head computed both ways, whole generations counted in multiply-accumulates and in the
// tutorial's prompt (P) and generated (G) terms, and the plot of score-matrix bytes.
#pragma once

#include <string>

#include "kv_tables.hpp"

namespace infer::kv {

// 1. The demo run: time to first token and tokens/s, chapter 01's loop against this one.
void demo_table(const Context& cx, std::size_t prompt_tokens, const LoopRun& cached, const LoopRun& naive);
// 2. One attention head, one generation step both ways; writes the score-bytes plot to
//    `plot_path` (none when empty).
void attention_table(const Context& cx, const std::string& plot_path);
// 3. Multiply-accumulates to generate T tokens from cold start, checked against real runs.
void macs_table(const Context& cx);
// 4. The cost in P and G terms: attention scores and the whole model's MACs, for several (P, G);
//    the demo's own counted MACs checked against the formula.
void prompt_generated_table(const Context& cx, std::size_t prompt_tokens, const LoopRun& cached, const LoopRun& naive);

}  // namespace infer::kv
