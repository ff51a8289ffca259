// Exercise 07 — the acceptance rule of speculative sampling, for one round.
#pragma once

#include <functional>
#include <span>
#include <vector>

namespace exercise {

using Distribution = std::vector<double>;  // one probability per token of the vocabulary
using Uniform = std::function<double()>;   // each call: the next uniform draw in [0, 1)

// Given, not part of the exercise: the inverse CDF. The token at which the running sum of `dist`
// first exceeds u, for u in [0, 1) — a draw from `dist` when u is uniform.
inline int draw(std::span<const double> dist, double u) {
  double running = 0;
  int last = 0;  // rounding can leave the running sum a hair below u: fall back to the last token with mass
  for (std::size_t v = 0; v < dist.size(); ++v) {
    if (dist[v] <= 0) continue;
    running += dist[v];
    last = static_cast<int>(v);
    if (u < running) return last;
  }
  return last;
}

// The residual distribution of a rejection: max(0, p − q), normalised to sum to 1 — where the
// target has probability the draft lacked. When p ≤ q everywhere (p == q) there is no residual
// mass; return p itself (the rule never rejects then, but rounding might).
Distribution residual(const Distribution& p, const Distribution& q);

// What one round decided: the first `accepted` guesses stand, then the token `next`.
struct RoundResult {
  int accepted = 0;
  int next = 0;
  bool bonus = false;  // every guess was accepted, and `next` was drawn from the last target row
};

// The rule of Leviathan et al. (2023) and Chen et al. (2023) for one round of γ guesses.
//   guesses[i]: the draft's (i+1)-th token d_{i+1}, drawn from q[i];      i = 0 … γ−1
//   p[i]:       the target's distribution at the same position;           i = 0 … γ  (γ+1 rows:
//               p[γ] follows the last guess)
// For i = 0, 1, …: accept guesses[i] with probability min(1, p[i](x) / q[i](x)). At the first
// rejection, draw `next` from residual(p[i], q[i]) and stop. If all γ are accepted, draw the
// bonus token `next` from p[γ]. Every random decision uses `uniform` (and `draw` above).
RoundResult accept_round(const std::vector<Distribution>& p, const std::vector<int>& guesses,
                         const std::vector<Distribution>& q, const Uniform& uniform);

}  // namespace exercise
