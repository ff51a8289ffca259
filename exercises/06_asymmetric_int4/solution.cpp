// Exercise 06 (asymmetric INT4) — reference solution.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "asymmetric_int4.hpp"

namespace exercise {

std::vector<float> asymmetric_int4_round_trip(std::span<const float> w, int64_t group) {
  if (group < 1 || w.size() % static_cast<std::size_t>(group) != 0)
    throw std::invalid_argument("asymmetric_int4_round_trip: the size must be a multiple of the group");
  std::vector<float> out(w.size(), 0.0f);
  const auto g = static_cast<std::size_t>(group);
  for (std::size_t start = 0; start < w.size(); start += g) {
    const auto values = w.subspan(start, g);
    // The range includes 0 so that zero (padding, pruned weights) is exactly representable.
    const float lo = std::min(0.0f, *std::min_element(values.begin(), values.end()));
    const float hi = std::max(0.0f, *std::max_element(values.begin(), values.end()));
    const float scale = (hi - lo) / 15.0f;
    if (scale == 0.0f) continue;  // an all-zero group: out is already zero
    // All 16 codes cover [lo, hi]; a symmetric scheme would spend half of them on the sign
    // that a one-sided group never uses.
    const float zero = std::round(-lo / scale);
    for (std::size_t i = 0; i < g; ++i) {
      const float q = std::clamp(std::round(values[i] / scale) + zero, 0.0f, 15.0f);
      out[start + i] = (q - zero) * scale;
    }
  }
  return out;
}

}  // namespace exercise
