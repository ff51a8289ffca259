// Choosing the next token from the logits.
//
//   temperature 0          greedy: the most likely token (ties: lowest id)
//   temperature T > 0      softmax(logits / T), then optionally keep only the top_k most likely
//                          tokens and/or the smallest set whose probability reaches top_p,
//                          renormalise and draw
//   repeat_penalty r ≠ 1    before either: llama.cpp's repetition penalty on the logits of every
//                          token id among the last repeat_last_n tokens the sampler has seen
//                          (apply_repetition_penalty below)
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
  float repeat_penalty = 1.0f;  // 1 = off (llama.cpp's default); > 1 discourages repeats
  int repeat_last_n = 64;       // how many recent tokens are penalized (0: none, -1: all seen)
};

// llama.cpp's repetition penalty (llama_sampler_penalties, after CTRL, Keskar et al. 2019, with
// the sign fix): every token id that occurs in `recent` — once or many times, the same — has its
// logit moved toward "less likely" by the factor `penalty`:
//   logit > 0  →  logit / penalty          logit ≤ 0  →  logit · penalty
// (Dividing a negative logit would raise it, which is why the sign matters.) Ids outside the
// logits are ignored. penalty 1 changes nothing.
void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> recent, float penalty);

class Sampler {
 public:
  explicit Sampler(SamplingParams params);
  // Applies the repetition penalty over the recent tokens, then chooses; the chosen token joins
  // the recent tokens. One Sampler serves one sequence.
  int32_t sample(std::span<const float> logits);
  // Adds tokens the sampler did not choose to the recent ones (the prompt, as llama.cpp does).
  void accept(std::span<const int32_t> tokens);
  const std::vector<int32_t>& recent() const { return recent_; }  // oldest first, ≤ repeat_last_n
  const SamplingParams& params() const { return params_; }

  // The probability distribution sample() draws from, after temperature, top-k and top-p
  // (zeros outside the kept set; one-hot on the argmax at temperature 0). No repetition penalty.
  std::vector<float> distribution(std::span<const float> logits) const;
  // The distribution sample() would draw from if `then_seen` had followed the recent tokens:
  // the repetition penalty over the last repeat_last_n of (recent, then_seen), then
  // distribution(). The sampler does not change. Speculative decoding scores guess i+1 this way,
  // with the guesses d1 … di as `then_seen`, before it knows whether they will be kept.
  std::vector<float> distribution_after(std::span<const float> logits, std::span<const int32_t> then_seen = {}) const;
  // A token drawn from a distribution p (non-negative, summing to 1): the inverse CDF at one
  // uniform draw. sample(logits) is draw(distribution_after(logits)) at temperature > 0.
  // Throws when p has no positive mass (all zeros, or NaN from a 0/0 upstream).
  int32_t draw(std::span<const float> p);
  double uniform();  // the next uniform draw in [0, 1)

 private:
  void remember(int32_t token);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> recent_;  // the last repeat_last_n tokens seen
};

int32_t argmax(std::span<const float> values);

}  // namespace infer
