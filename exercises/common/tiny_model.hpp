// A tiny Llama with random weights, for exercise tests that need a forward pass but not the
// trained model: same architecture and code path as the real one (grouped-query attention
// included), small enough that a whole test runs in milliseconds and needs no download.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "model/llama.hpp"

namespace exercise {

// 2 layers, d = 64, 4 query heads over 2 key/value heads of dimension 16, MLP 128, 97 tokens,
// context 256. Weights ~ N(0, 1/√in) so activations stay O(1); norms are all ones.
infer::Llama tiny_random_llama(uint64_t seed = 1);

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
