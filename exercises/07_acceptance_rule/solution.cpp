// Exercise 07 (the acceptance rule) — reference solution.
#include <algorithm>

#include "acceptance_rule.hpp"

namespace exercise {

Distribution residual(const Distribution& p, const Distribution& q) {
  Distribution r(p.size());
  double total = 0;
  for (std::size_t v = 0; v < p.size(); ++v) {
    r[v] = std::max(0.0, p[v] - q[v]);  // the target's mass that the draft did not cover
    total += r[v];
  }
  if (total <= 0) return p;  // p == q: nothing is missing, and a rejection cannot happen
  for (double& x : r) x /= total;
  return r;
}

RoundResult accept_round(const std::vector<Distribution>& p, const std::vector<int>& guesses,
                         const std::vector<Distribution>& q, const Uniform& uniform) {
  const std::size_t gamma = guesses.size();
  for (std::size_t i = 0; i < gamma; ++i) {
    const auto x = static_cast<std::size_t>(guesses[i]);
    // Keep x with probability min(1, p/q): P(u < p/q) = p/q for u uniform in [0, 1), and a
    // token the target rules out (p = 0) is never kept, whatever u is.
    if (uniform() < p[i][x] / q[i][x]) continue;
    // Rejected: the draft was over-confident at x, so the correction comes from where the target
    // has more mass than the draft, never from p itself.
    return {static_cast<int>(i), draw(residual(p[i], q[i]), uniform()), false};
  }
  // Every guess stood. The target's pass already computed the row after the last guess: one more
  // token for free.
  return {static_cast<int>(gamma), draw(p[gamma], uniform()), true};
}

}  // namespace exercise
