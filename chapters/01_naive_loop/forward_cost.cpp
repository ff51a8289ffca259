#include "forward_cost.hpp"

namespace infer {

ForwardCost forward_cost(const LlamaConfig& c, int64_t n, int64_t p, int64_t logit_rows) {
  const int64_t d = c.d_model, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  ForwardCost cost;
  cost.linear_macs = c.n_layers * n * (d * qw + 2 * d * kvw + qw * d + 3 * d * F);
  cost.attention_macs = c.n_layers * 2 * static_cast<int64_t>(c.n_heads) * c.head_dim * (n * p + n * (n + 1) / 2);
  cost.output_macs = logit_rows * static_cast<int64_t>(c.vocab_size) * d;
  return cost;
}

}  // namespace infer
