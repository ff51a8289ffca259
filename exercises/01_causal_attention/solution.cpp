// Exercise 01 — reference solution.
#include <algorithm>
#include <cmath>

#include "attention_exercise.hpp"

namespace exercise {

std::vector<float> causal_attention_one_head(const std::vector<float>& q, const std::vector<float>& k,
                                             const std::vector<float>& v, int T, int D) {
  const auto at = [D](int row, int col) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(D) + static_cast<std::size_t>(col); };
  std::vector<float> out(static_cast<std::size_t>(T) * static_cast<std::size_t>(D), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> p(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) {
    float max_score = -INFINITY;
    for (int j = 0; j <= t; ++j) {  // causal: only positions up to t
      float s = 0.0f;
      for (int i = 0; i < D; ++i) s += q[at(t, i)] * k[at(j, i)];
      p[j] = s * scale;
      max_score = std::max(max_score, s * scale);
    }
    double sum = 0.0;
    for (int j = 0; j <= t; ++j) sum += (p[j] = std::exp(p[j] - max_score));
    for (int j = 0; j <= t; ++j)
      for (int i = 0; i < D; ++i) out[at(t, i)] += static_cast<float>(p[j] / sum) * v[at(j, i)];
  }
  return out;
}

}  // namespace exercise
