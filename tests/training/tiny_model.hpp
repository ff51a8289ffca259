// Shared by chapter 08's tests: a Llama shape small enough that a gradient check can perturb
// every parameter, and a seeded source of test numbers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/config.hpp"

namespace infer::test {

// 2 blocks, d = 16, 4 query heads sharing 2 key/value heads of 4, MLP 24, vocabulary 32, tied.
inline LlamaConfig tiny_llama(int layers = 2) {
  LlamaConfig c = LlamaConfig::from_shape(layers, 16, 4, 2, 24, 32, 64);  // d, H, H_kv, F, V, context
  c.rope_theta = 10.0f;  // a small base turns the pairs far within a few positions
  c.tied_embeddings = true;
  return c;
}

// Uniform numbers in [lo, hi) and token ids from a fixed seed.
struct TestRng {
  std::mt19937_64 engine;
  explicit TestRng(uint64_t seed) : engine(seed) {}
  double uniform(double lo = -1, double hi = 1) {
    return lo + (hi - lo) * static_cast<double>(engine() >> 11) * 0x1.0p-53;
  }
  std::vector<double> vector(std::size_t n, double lo = -1, double hi = 1) {
    std::vector<double> v(n);
    for (double& x : v) x = uniform(lo, hi);
    return v;
  }
  std::vector<int32_t> tokens(std::size_t n, int vocab) {
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = static_cast<int32_t>(engine() % static_cast<uint64_t>(vocab));
    return t;
  }
};

}  // namespace infer::test
