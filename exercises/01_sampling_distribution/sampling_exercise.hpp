// Exercise 01 — the distribution a sampler draws the next token from, with min-p, in llama.cpp's
// order.
#pragma once

#include <span>
#include <vector>

namespace exercise {

struct SamplingKnobs {
  float temperature = 1.0f;  // 0: greedy
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // 1: no limit
  float min_p = 0.0f;        // 0: no limit
};

// logits: one score per token of the vocabulary. Returns one probability per token, after
// llama.cpp's default chain of samplers (common/common.h: … top_k, typ_p, top_p, min_p, xtc,
// temperature), which CUTS FIRST, at temperature 1, and applies the temperature last:
//   1. top_k > 0   only the k largest logits stay candidates (equal logits: the lower id first)
//   2. top_p < 1   of the candidates, softmax of their logits at temperature 1; only the smallest
//                  set of the most likely whose probability reaches top_p stays
//   3. min_p > 0   only the candidates whose temperature-1 probability is at least min_p times the
//                  most likely one's stay: exp(logit − largest logit) ≥ min_p
//   4. softmax(logit / temperature) over what stayed; every other token gets exactly 0.
// temperature 0: all mass on the largest logit (equal logits: the lowest id).
// Throws std::invalid_argument for empty logits, temperature < 0, top_k < 0, top_p outside
// (0, 1] or min_p outside [0, 1].
std::vector<float> sampling_distribution(std::span<const float> logits, const SamplingKnobs& knobs);

}  // namespace exercise
