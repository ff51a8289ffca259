// Small helpers shared by the exercise tests. Standard C++ only: the tests that include just this
// link no part of the course's library (exercises/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace exercise {

// n values drawn from N(0, scale²), the same for the same seed.
inline std::vector<float> random_normal(std::size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(n);
  for (float& e : x) e = d(rng);
  return x;
}

// Seeded uniforms in [0, 1), the same on every machine: the 64-bit Mersenne Twister is specified
// to the bit by the standard, and its top 53 bits make a double directly (the standard's
// uniform_real_distribution may differ between library versions).
class Uniforms {
 public:
  explicit Uniforms(uint64_t seed) : rng_(seed) {}
  double operator()() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace exercise
