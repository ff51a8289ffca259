// How much arithmetic one forward pass does, in closed form.
//
// For n new tokens at positions p … p+n-1 of a sequence, with logits wanted for R of them:
//
//   per layer, linear layers:  n · (d·H·D + 2·d·H_kv·D + H·D·d + 3·d·F)     [q k v o, gate up down]
//   per layer, attention:      2 · H · D · Σ_{t=0}^{n-1} (p + t + 1)          [q·k and p·v]
//                            = 2 · H · D · (n·p + n(n+1)/2)
//   output layer:              R · V · d
//
// The naive loop runs n = T, p = 0 at every step, so its attention term grows as T² per step
// and T³ over a whole generation; with a cache (chapter 02) each step is n = 1, p = T-1.
#pragma once

#include <cstdint>

#include "model/config.hpp"

namespace infer {

struct ForwardCost {
  int64_t linear_macs = 0;     // projections and MLP, all layers
  int64_t attention_macs = 0;  // scores and weighted sums, all layers
  int64_t output_macs = 0;     // the vocabulary projection
  int64_t total() const { return linear_macs + attention_macs + output_macs; }
};

ForwardCost forward_cost(const LlamaConfig& config, int64_t n_new, int64_t n_past, int64_t logit_rows);

}  // namespace infer
