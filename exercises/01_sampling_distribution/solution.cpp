// Exercise 01 (sampling) — reference solution.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "sampling_exercise.hpp"

namespace exercise {

std::vector<float> sampling_distribution(std::span<const float> logits, const SamplingKnobs& knobs) {
  if (logits.empty()) throw std::invalid_argument("sampling_distribution: no logits");
  if (knobs.temperature < 0 || knobs.top_k < 0 || !(knobs.top_p > 0 && knobs.top_p <= 1) || !(knobs.min_p >= 0 && knobs.min_p <= 1))
    throw std::invalid_argument("sampling_distribution: temperature ≥ 0, top_k ≥ 0, top_p in (0, 1], min_p in [0, 1]");
  const std::size_t vocab = logits.size();
  // Ids by logit, the largest first; a stable sort keeps the lower id first among equal logits.
  std::vector<std::size_t> by_logit(vocab);
  std::iota(by_logit.begin(), by_logit.end(), std::size_t{0});
  std::stable_sort(by_logit.begin(), by_logit.end(), [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  std::vector<float> probs(vocab, 0.0f);
  if (knobs.temperature == 0.0f) {
    probs[by_logit[0]] = 1.0f;
    return probs;
  }
  // Every cut keeps a prefix of by_logit: `kept` is its length.
  const double largest = logits[by_logit[0]];
  const auto relative = [&](std::size_t rank, double t) { return std::exp((logits[by_logit[rank]] - largest) / t); };  // ≤ 1: no overflow
  std::size_t kept = knobs.top_k > 0 ? std::min(vocab, static_cast<std::size_t>(knobs.top_k)) : vocab;

  // Top-p on the temperature-1 softmax of the top-k candidates: the token at which the running
  // sum reaches p is kept, so one always survives.
  if (knobs.top_p < 1.0f) {
    double z = 0;
    for (std::size_t r = 0; r < kept; ++r) z += relative(r, 1.0);
    double reached = 0;
    for (std::size_t r = 0; r < kept; ++r) {
      reached += relative(r, 1.0) / z;
      if (reached >= knobs.top_p) {
        kept = r + 1;
        break;
      }
    }
  }
  // Min-p against the most likely token, also at temperature 1: p_i / p_max = exp(logit_i − max),
  // whatever the earlier cuts left (they change the normaliser, never the ratio).
  std::size_t above = 0;
  while (above < kept && relative(above, 1.0) >= knobs.min_p) ++above;
  kept = above;

  // The temperature only reshapes the survivors.
  double z = 0;
  for (std::size_t r = 0; r < kept; ++r) z += relative(r, knobs.temperature);
  for (std::size_t r = 0; r < kept; ++r) probs[by_logit[r]] = static_cast<float>(relative(r, knobs.temperature) / z);
  return probs;
}

}  // namespace exercise
