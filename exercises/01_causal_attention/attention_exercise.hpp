// Exercise 01: causal attention of one head, written with plain loops.
#pragma once

#include <vector>

namespace exercise {

// q, k, v: T rows of D floats each, row-major (element [t][i] at t*D + i).
// Returns out, T rows of D floats: out[t] = Σ_{j≤t} softmax_j(q[t]·k[j]/√D) · v[j].
std::vector<float> causal_attention_one_head(const std::vector<float>& q, const std::vector<float>& k,
                                             const std::vector<float>& v, int T, int D);

}  // namespace exercise
