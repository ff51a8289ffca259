#include "smoothing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace infer::quant {

std::vector<std::vector<float>> smoothing_factors(const InputMaxima& maxima, const ReferenceWeights& reference, float alpha) {
  const std::size_t n = reference.projections.size();
  if (maxima.channels.size() != n || n % 7 != 0) throw std::invalid_argument("smoothing_factors: 7 projections per layer");
  std::vector<std::vector<float>> s(n);
  for (std::size_t layer = 0; layer < n; layer += 7) {
    for (const std::vector<std::size_t>& group : shared_input_groups()) {
      const std::vector<float>& act = maxima.channels[layer + group[0]];  // the same input for the whole group
      std::vector<float> w_max(act.size(), 0.0f);
      for (std::size_t k : group) {
        const Tensor& w = reference.projections[layer + k];
        const int64_t rows = w.dim(0), cols = w.dim(1);
        if (cols != std::ssize(act)) throw std::invalid_argument("smoothing_factors: shapes differ");
        const float* p = w.host<float>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < cols; ++j)
            w_max[j] = std::max(w_max[j], std::fabs(p[r * cols + j]));
      }
      std::vector<float> factors(act.size(), 1.0f);
      for (std::size_t j = 0; j < act.size(); ++j)
        if (act[j] > 0 && w_max[j] > 0)
          factors[j] = static_cast<float>(std::pow(act[j], alpha) / std::pow(w_max[j], 1.0f - alpha));
      for (std::size_t k : group) s[layer + k] = factors;
    }
  }
  return s;
}

}  // namespace infer::quant
