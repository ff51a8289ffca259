// Exercise 06 (SmoothQuant) — reference solution.
#include <cmath>

#include "smoothquant.hpp"

namespace exercise {

std::vector<float> smoothing_factors(std::span<const float> act_absmax, std::span<const float> weight_absmax, float alpha) {
  std::vector<float> s(act_absmax.size(), 1.0f);
  for (std::size_t j = 0; j < s.size(); ++j) {
    if (act_absmax[j] <= 0.0f || weight_absmax[j] <= 0.0f) continue;  // nothing to balance
    // After smoothing, channel j's activation max is a^(1−α)·w^(1−α) and its weight max
    // a^α·w^α: at α = 0.5 both become √(a·w), the difficulty split evenly.
    s[j] = std::pow(act_absmax[j], alpha) / std::pow(weight_absmax[j], 1.0f - alpha);
  }
  return s;
}

void apply_smoothing(std::span<float> x, int64_t tokens, std::span<float> w, int64_t rows, std::span<const float> s) {
  const auto d = std::ssize(s);
  // x_j / s_j times w_j · s_j: every term of x·wᵀ keeps its value, only the ranges move.
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j) x[t * d + j] /= s[j];
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t j = 0; j < d; ++j) w[o * d + j] *= s[j];
}

}  // namespace exercise
