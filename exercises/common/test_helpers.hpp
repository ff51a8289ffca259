// Small helpers shared by the exercise tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "tensor/tensor.hpp"

namespace exercise {

// n values drawn from N(0, scale²), the same for the same seed.
inline std::vector<float> random_normal(std::size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(n);
  for (float& e : x) e = d(rng);
  return x;
}

// Largest |a − b| over two tensors of the same shape (logits, attention outputs).
inline float max_abs_diff(const infer::Tensor& a, const infer::Tensor& b) {
  const auto x = a.to_vector(), y = b.to_vector();
  if (x.size() != y.size()) throw std::invalid_argument("max_abs_diff: different sizes");
  float m = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

// n token ids spread over a vocabulary of `vocab`, without the repetition of a short cycle.
inline std::vector<int32_t> spread_tokens(int n, int vocab) {
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[i] = (i * 37 + 11) % vocab;
  return t;
}

}  // namespace exercise
