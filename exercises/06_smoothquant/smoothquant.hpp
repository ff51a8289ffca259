// Exercise 06 — SmoothQuant: move the activations' outliers into the weights.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace exercise {

// The per-input-channel smoothing factors of SmoothQuant (Xiao et al., 2023):
//   s_j = max|X_j|^α / max|W_j|^(1−α)
// act_absmax[j]: the largest |x| of channel j over the calibration tokens; weight_absmax[j]: the
// largest |w| of input column j of the weight. α = 0 leaves the activations alone, α = 1 flattens
// them completely. A channel whose activation or weight maximum is 0 gets s_j = 1.
std::vector<float> smoothing_factors(std::span<const float> act_absmax, std::span<const float> weight_absmax, float alpha);

// Applies the factors without changing the product X·Wᵀ: X' = X / s (x[t, j] / s_j, x is
// [tokens, d]) and W' = W · s (w[o, j] · s_j, w is [rows, d], input channel j is COLUMN j).
void apply_smoothing(std::span<float> x, int64_t tokens, std::span<float> w, int64_t rows, std::span<const float> s);

}  // namespace exercise
