// Choosing the next token from the logits.
//
//   temperature 0          greedy: the most likely token (ties: lowest id)
//   temperature T > 0      softmax(logits / T), then optionally keep only the top_k most likely
//                          tokens and/or the smallest set whose probability reaches top_p,
//                          renormalise and draw
// Draws come from a seeded 64-bit Mersenne Twister turned into uniforms by our own code (the
// standard's distributions may differ between library versions), so a seed gives the same
// tokens on every run and every machine.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace infer {

struct SamplingParams {
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 0;             // 0 = no limit
  float top_p = 1.0f;        // 1 = no limit
  uint64_t seed = 42;
};

class Sampler {
 public:
  explicit Sampler(SamplingParams params);
  int32_t sample(std::span<const float> logits);
  const SamplingParams& params() const { return params_; }

  // The probability distribution sample() draws from, after temperature, top-k and top-p
  // (zeros outside the kept set; one-hot on the argmax at temperature 0).
  std::vector<float> distribution(std::span<const float> logits) const;
  // A token drawn from a distribution p (non-negative, summing to 1): the inverse CDF at one
  // uniform draw. sample(logits) is draw(distribution(logits)) at temperature > 0.
  int32_t draw(std::span<const float> p);
  double uniform();  // the next uniform draw in [0, 1)

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

int32_t argmax(std::span<const float> values);

}  // namespace infer
