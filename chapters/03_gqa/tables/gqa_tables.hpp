// Chapter 03's tables: this model's cache per token, what multi-query attention and a sliding
// window cost on held-out text (measured), and the cache of well-known and published shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"

namespace infer::gqa {

// 2. This model's cache per token, chapter 02's layout against the grouped one (real allocations).
void print_cache_table(const LlamaConfig& c, const CommonOptions& o, nlohmann::json& figures);
// 3. Multi-query by mean-pooling the key/value heads: perplexity and agreement on held-out text.
void run_multi_query(LoadedModel& m, const CommonOptions& o, int64_t eval_tokens, int64_t window, nlohmann::json& figures);

// 4. Sliding-window attention imposed on this model: the first `eval_tokens` held-out tokens
//    (up to the context length) in one window, every position attending to the last W only; then
//    at the smallest W with every 6th layer global (5 local to 1 global).
struct SlidingResult {
  int64_t window = 0;
  int global_every = 0;                        // > 0: every n-th layer global (the local/global mix)
  double perplexity = 0, full_perplexity = 0;  // over the positions the window cuts (query position ≥ W)
  double agreement = 0;                        // greedy agreement with the full cache there
};
std::vector<SlidingResult> sliding_window_table(LoadedModel& m, const CommonOptions& o, int64_t eval_tokens,
                                                const std::vector<int64_t>& windows, nlohmann::json& figures);

// 5 and 6. The formula for well-known shapes, and how many users of `user_tokens` fit.
void print_shape_tables(const LlamaConfig& own, const CommonOptions& o, int64_t user_tokens, nlohmann::json& figures);
// 7. Beyond GQA: cache bytes per token and per 4k/32k/128k sequence for published shapes, with
//    this model's rows (its sliding-window rows with the cost measured in table 4, if run).
void beyond_gqa_table(const LlamaConfig& own, const std::string& own_name, const CommonOptions& o,
                      const std::vector<SlidingResult>& measured, nlohmann::json& figures);

}  // namespace infer::gqa
