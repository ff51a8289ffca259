// Exercise 01 — the distribution a sampler draws the next token from.
#pragma once

#include <span>
#include <vector>

namespace exercise {

// logits: one score per token of the vocabulary. Returns one probability per token:
//   temperature 0   all mass on the largest logit (ties: the lowest token id)
//   temperature T   softmax(logits / T) over the candidates kept by
//                   top_k  (> 0: only the k largest logits; 0: no limit), then
//                   top_p  (< 1: only the smallest set of most likely candidates whose
//                           probability reaches top_p; 1: no limit),
//                   renormalised to sum to 1; every other token gets exactly 0.
std::vector<float> sampling_distribution(std::span<const float> logits, float temperature, int top_k, float top_p);

}  // namespace exercise
