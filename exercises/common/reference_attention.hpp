// Causal attention of one head from its definition, for the tests of the attention exercises:
// long double throughout, the softmax normalised through a log-sum-exp, a different route to the
// numbers than the loops the exercises ask for. Standard C++ only.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace exercise {

// q, k, v: T rows of D floats. out[t] = Σ_{j≤t} softmax_j(q[t]·k[j]/√D) · v[j].
inline std::vector<float> reference_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int T,
                                              int D) {
  std::vector<float> out(static_cast<std::size_t>(T * D));
  std::vector<long double> score(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) {
    long double top = -INFINITY, sum = 0;
    for (int j = 0; j <= t; ++j) {
      long double s = 0;
      for (int i = 0; i < D; ++i) s += static_cast<long double>(q[t * D + i]) * k[j * D + i];
      score[j] = s / std::sqrt(static_cast<long double>(D));
      top = std::max(top, score[j]);
    }
    for (int j = 0; j <= t; ++j) sum += std::exp(score[j] - top);
    const long double log_z = top + std::log(sum);  // softmax_j = exp(score_j − log Σ exp)
    for (int i = 0; i < D; ++i) {
      long double o = 0;
      for (int j = 0; j <= t; ++j) o += std::exp(score[j] - log_z) * v[j * D + i];
      out[t * D + i] = static_cast<float>(o);
    }
  }
  return out;
}

}  // namespace exercise
