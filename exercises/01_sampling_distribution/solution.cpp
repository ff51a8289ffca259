// Exercise 01 (sampling) — reference solution.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "sampling_exercise.hpp"

namespace exercise {

std::vector<float> sampling_distribution(std::span<const float> logits, float temperature, int top_k, float top_p) {
  const std::size_t n = logits.size();
  std::vector<float> p(n, 0.0f);
  // Token ids, most likely first; a stable sort keeps the lower id first among equal logits.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });

  if (temperature == 0.0f) {  // greedy: no randomness left
    p[order[0]] = 1.0f;
    return p;
  }
  std::size_t keep = top_k > 0 ? std::min(n, static_cast<std::size_t>(top_k)) : n;

  // Softmax over the kept ids in double. exp(x − max) ≤ 1, so large logits cannot overflow.
  const double max_logit = logits[order[0]];
  std::vector<double> weight(keep);
  for (std::size_t i = 0; i < keep; ++i) weight[i] = std::exp((logits[order[i]] - max_logit) / temperature);
  double total = std::accumulate(weight.begin(), weight.end(), 0.0);

  // Nucleus: the first i at which the running probability reaches top_p is kept, so at least
  // one token always survives.
  if (top_p < 1.0f) {
    double running = 0.0;
    for (std::size_t i = 0; i < keep; ++i) {
      running += weight[i] / total;
      if (running >= top_p) {
        keep = i + 1;
        break;
      }
    }
    total = std::accumulate(weight.begin(), weight.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  }
  for (std::size_t i = 0; i < keep; ++i) p[order[i]] = static_cast<float>(weight[i] / total);
  return p;
}

}  // namespace exercise
