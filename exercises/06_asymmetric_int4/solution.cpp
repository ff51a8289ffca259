// Exercise 06 (asymmetric INT4, clipping search) — reference solution.
#include <algorithm>
#include <stdexcept>

#include "asymmetric_int4.hpp"

namespace exercise {

std::vector<float> clipped_int4_round_trip(std::span<const float> w, int64_t group) {
  if (group < 1 || w.size() % static_cast<std::size_t>(group) != 0)
    throw std::invalid_argument("clipped_int4_round_trip: the size must be a multiple of the group");
  const auto g = static_cast<std::size_t>(group);
  std::vector<float> out(w.size()), trial(g);
  for (std::size_t start = 0; start < w.size(); start += g) {
    const auto values = w.subspan(start, g);
    const auto best = std::span<float>(out).subspan(start, g);
    // Shrinking both ends by the same factor keeps 0 inside the range, so 0 stays exact.
    const float lo = std::min(0.0f, *std::min_element(values.begin(), values.end()));
    const float hi = std::max(0.0f, *std::max_element(values.begin(), values.end()));
    double best_error = INFINITY;
    for (int k = 0; k < kClipSteps; ++k) {
      const float c = clip_factor(k);
      quantize_group(values, c * lo, c * hi, trial);
      double error = 0;  // in double: thousands of tiny squares, compared between ranges
      for (std::size_t i = 0; i < g; ++i) error += (double{values[i]} - trial[i]) * (double{values[i]} - trial[i]);
      // Strictly smaller: on a tie the wider range (tried first) stays, clipping nothing for nothing.
      if (error < best_error) {
        best_error = error;
        std::copy(trial.begin(), trial.end(), best.begin());
      }
    }
  }
  return out;
}

}  // namespace exercise
