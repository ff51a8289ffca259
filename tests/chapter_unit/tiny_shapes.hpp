// What the chapter tests of caches and attention share: a model shape small enough to check by
// hand, and rows of seeded random numbers to feed a KvStore with.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/config.hpp"
#include "tensor/tensor.hpp"

namespace infer::test {

// `layers` layers of 4 query heads sharing 2 key/value heads of 8 (grouped, like the real model).
inline LlamaConfig tiny_attention_config(int layers) {
  return LlamaConfig::from_shape(layers, /*d_model=*/32, /*heads=*/4, /*kv_heads=*/2, /*d_ff=*/48, /*vocab=*/50, /*context=*/64);
}

// rows × cols standard-normal numbers.
inline Tensor random_rows(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& e : x) e = normal(rng);
  return Tensor::from_vector(x, {rows, cols});
}

}  // namespace infer::test
