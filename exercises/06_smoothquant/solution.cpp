// Exercise 06 (SmoothQuant's α) — reference solution.
#include <cmath>
#include <vector>

#include "smoothquant.hpp"

namespace exercise {

namespace {

// max |m[i][j]| over the rows i, for every column j of an [r, c] matrix: per input channel.
std::vector<float> column_absmax(std::span<const float> m, int64_t r, int64_t c) {
  std::vector<float> out(static_cast<std::size_t>(c), 0.0f);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[j] = std::max(out[j], std::fabs(m[i * c + j]));
  return out;
}

// a·bᵀ for a [n, d] and b [m, d], accumulated in double.
std::vector<double> product(std::span<const float> a, int64_t n, std::span<const float> b, int64_t m, int64_t d) {
  std::vector<double> y(static_cast<std::size_t>(n * m), 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t j = 0; j < d; ++j) y[t * m + o] += double{a[t * d + j]} * b[o * d + j];
  return y;
}

}  // namespace

double w8a8_error(std::span<const float> x, int64_t tokens, std::span<const float> w, int64_t rows, float alpha) {
  const int64_t d = std::ssize(x) / tokens;
  std::vector<float> xs(x.begin(), x.end()), ws(w.begin(), w.end());
  if (alpha >= 0) {
    const std::vector<float> s = smoothing_factors(column_absmax(x, tokens, d), column_absmax(w, rows, d), alpha);
    // x_j / s_j times w_j · s_j: every term of x·wᵀ keeps its value, only the ranges move.
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < d; ++j) xs[t * d + j] /= s[j];
    for (int64_t o = 0; o < rows; ++o)
      for (int64_t j = 0; j < d; ++j) ws[o * d + j] *= s[j];
  }
  // Activations: one scale for the whole tensor (they are quantized on the fly, token by token
  // through the same kernel); weights: one scale per output row, computed offline.
  const std::vector<float> xq = int8_round_trip(xs, 1, tokens * d), wq = int8_round_trip(ws, rows, d);
  const std::vector<double> got = product(xq, tokens, wq, rows, d), want = product(x, tokens, w, rows, d);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  return std::sqrt(num / den);
}

float best_alpha(std::span<const float> x, int64_t tokens, std::span<const float> w, int64_t rows, std::span<const float> alphas) {
  float best = alphas.empty() ? 0.5f : alphas[0];
  double best_error = INFINITY;
  for (float a : alphas) {
    const double e = w8a8_error(x, tokens, w, rows, a);
    if (e < best_error) best = a, best_error = e;  // strictly: a tie keeps the earlier α
  }
  return best;
}

}  // namespace exercise
