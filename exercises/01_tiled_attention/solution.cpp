// Exercise 01 (tiled attention) — reference solution.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tiled_attention.hpp"

namespace exercise {

std::vector<float> tiled_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                   int T, int D, int tile) {
  if (tile < 1) throw std::invalid_argument("tiled_attention: tile must be at least 1");
  const auto at = [D](int row, int col) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(D) + static_cast<std::size_t>(col); };
  std::vector<float> out(static_cast<std::size_t>(T) * static_cast<std::size_t>(D), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> score(static_cast<std::size_t>(tile)), o(static_cast<std::size_t>(D));
  for (int t = 0; t < T; ++t) {
    float m = -INFINITY, l = 0.0f;
    std::fill(o.begin(), o.end(), 0.0f);
    for (int j0 = 0; j0 <= t; j0 += tile) {
      const int j1 = std::min(j0 + tile, t + 1);  // causal: the last tile stops at t
      float tile_max = -INFINITY;
      for (int j = j0; j < j1; ++j) {
        float s = 0.0f;
        for (int i = 0; i < D; ++i) s += q[at(t, i)] * k[at(j, i)];
        score[j - j0] = s * scale;
        tile_max = std::max(tile_max, score[j - j0]);
      }
      // Everything summed so far was relative to the old maximum: bring it to the new one.
      // (exp(−∞) = 0 on the first tile, when nothing has been summed.)
      const float m_new = std::max(m, tile_max), rescale = std::exp(m - m_new);
      l *= rescale;
      for (float& x : o) x *= rescale;
      for (int j = j0; j < j1; ++j) {
        const float p = std::exp(score[j - j0] - m_new);
        l += p;
        for (int i = 0; i < D; ++i) o[i] += p * v[at(j, i)];
      }
      m = m_new;
    }
    for (int i = 0; i < D; ++i) out[at(t, i)] = o[i] / l;  // the softmax's denominator, once
  }
  return out;
}

}  // namespace exercise
