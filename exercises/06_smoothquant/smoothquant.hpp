// Exercise 06 — SmoothQuant's migration strength α, measured and searched for one layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace exercise {

// Given: SmoothQuant's per-input-channel factors (Xiao et al., 2023; chapter 06's
// tables/smoothing.cpp), s_j = max|X_j|^α / max|W_j|^(1−α), 1 for a channel whose maximum is 0.
// Dividing activation channel j by s_j and multiplying the weights' input column j by s_j leaves
// X·Wᵀ unchanged and moves the activation outliers' range into the weights.
inline std::vector<float> smoothing_factors(std::span<const float> act_absmax, std::span<const float> weight_absmax, float alpha) {
  std::vector<float> s(act_absmax.size(), 1.0f);
  for (std::size_t j = 0; j < s.size(); ++j)
    if (act_absmax[j] > 0.0f && weight_absmax[j] > 0.0f) s[j] = std::pow(act_absmax[j], alpha) / std::pow(weight_absmax[j], 1.0f - alpha);
  return s;
}

// Given: absmax INT8 round trip (chapter 06's absmax.hpp) of `runs` consecutive runs of `size`
// values, each run with its own scale max|v| / 127: the whole tensor as one run (per tensor), or
// one run per row (per row).
inline std::vector<float> int8_round_trip(std::span<const float> v, int64_t runs, int64_t size) {
  std::vector<float> out(v.size());
  for (int64_t r = 0; r < runs; ++r) {
    float amax = 0;
    for (int64_t i = r * size; i < (r + 1) * size; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float scale = amax / 127.0f;
    for (int64_t i = r * size; i < (r + 1) * size; ++i) out[i] = scale > 0 ? std::round(v[i] / scale) * scale : 0.0f;
  }
  return out;
}

// YOUR PART, 1. The W8A8 error of one layer: x is [tokens, d], w is [rows, d] (input channel j is
// COLUMN j of both), d = x.size() / tokens. With α ≥ 0, smooth first: the factors at α from the
// column maxima of |x| and |w|, x[t][j] / s_j and w[o][j] · s_j; with α < 0, no smoothing. Then
// quantize x' to INT8 per tensor and w' per row (int8_round_trip) and return, in double,
//   ‖ Q(x')·Q(w')ᵀ − x·wᵀ ‖ / ‖ x·wᵀ ‖      (Frobenius norms; x·wᵀ the original, unquantized product)
double w8a8_error(std::span<const float> x, int64_t tokens, std::span<const float> w, int64_t rows, float alpha);

// YOUR PART, 2. The α of `alphas` with the smallest w8a8_error for this layer; on a tie, the
// first. SmoothQuant picks α per model this way (0.5 for most, up to 0.85 for others).
float best_alpha(std::span<const float> x, int64_t tokens, std::span<const float> w, int64_t rows, std::span<const float> alphas);

}  // namespace exercise
