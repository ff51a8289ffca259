// Exercise 06 — asymmetric INT4 with a clipping search: the range that minimises the error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace exercise {

// Given: chapter 06's asymmetric INT4 (chapters/06_quantization/schemes/asymmetric.hpp) for one
// group, on a range [lo, hi] the caller chooses, lo ≤ 0 ≤ hi:
//   scale = (hi − lo) / 15,  zero = round(−lo / scale),  q = clamp(round(w / scale) + zero, 0, 15),
//   ŵ = (q − zero) · scale
// Weights outside the range clamp to its ends. A range of width 0 gives zeros.
inline void quantize_group(std::span<const float> w, float lo, float hi, std::span<float> out) {
  const float scale = (hi - lo) / 15.0f;
  if (scale == 0.0f) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  const float zero = std::round(-lo / scale);
  for (std::size_t i = 0; i < w.size(); ++i) out[i] = (std::clamp(std::round(w[i] / scale) + zero, 0.0f, 15.0f) - zero) * scale;
}

// The clipping factors tried, largest first: c = 1 − k/20 for k = 0 … 10 (1.00, 0.95, … 0.50).
inline constexpr int kClipSteps = 11;
inline float clip_factor(int k) { return 1.0f - static_cast<float>(k) / 20.0f; }

// YOUR PART. w: weights in groups of `group` consecutive values. For each group, with
// lo = min(0, min w) and hi = max(0, max w), quantize on each range [c·lo, c·hi], c = clip_factor(k)
// for k = 0 … kClipSteps − 1, and keep the ŵ whose squared error Σ (w − ŵ)² over the group is the
// smallest (on a tie, the larger c). One outlier then no longer stretches the step for the whole
// group: it is clipped, and everything else lands on a finer grid. Returns ŵ. Throws
// std::invalid_argument for a group < 1 or a size that is not a multiple of it.
std::vector<float> clipped_int4_round_trip(std::span<const float> w, int64_t group);

}  // namespace exercise
