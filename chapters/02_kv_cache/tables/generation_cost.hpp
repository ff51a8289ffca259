// The cost of a whole generation in closed form: G tokens after a P-token prompt, by the naive
// loop (every step re-runs the whole sequence) and with a cache (prefill once, then one token
// per step). Step 1 produces token 1 from the prompt; step j > 1 feeds token j−1, so the last
// step sees P + G − 1 tokens and the G-th token is produced but never fed.
//
// Attention scores (q·k pairs) are what the tutorial counts:
//   one pass of n new tokens after p cached ones:  n·p + n(n+1)/2 pairs (causal)
//   recompute:  Σ_{n=P}^{P+G−1} n(n+1)/2   ≈ P²G/2 + PG²/2 + G³/6      O(P²G + PG² + G³)
//   cached:     P(P+1)/2 + Σ_{t=1}^{G−1} (P + t)  ≈ P²/2 + PG + G²/2  O(P² + PG), plus G²/2
#pragma once

#include <cstdint>

#include "01_naive_loop/forward_cost.hpp"
#include "model/config.hpp"

namespace infer::kv {

// Causal q·k pairs of one pass: n new tokens after p earlier ones.
int64_t pass_scores(int64_t n_new, int64_t n_past);

int64_t recompute_scores(int64_t P, int64_t G);  // exact, in closed form
int64_t cached_scores(int64_t P, int64_t G);
double recompute_scores_leading(double P, double G);  // P²G/2 + PG²/2 + G³/6
double cached_scores_leading(double P, double G);     // P²/2 + PG + G²/2

// The whole model's multiply-accumulates (forward_cost of chapter 01, summed over the steps).
struct GenerationMacs {
  int64_t recompute = 0;
  int64_t cached = 0;
};
GenerationMacs generation_macs(const LlamaConfig& config, int64_t P, int64_t G);

}  // namespace infer::kv
