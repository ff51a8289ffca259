// Exercise 07 (the acceptance rule, several candidates) — reference solution.
#include <algorithm>

#include "acceptance_rule.hpp"

namespace exercise {

Distribution residual(const Distribution& p, const Distribution& q) {
  Distribution missing(p.size(), 0.0);
  double mass = 0;
  for (std::size_t v = 0; v < p.size(); ++v) {
    missing[v] = std::max(0.0, p[v] - q[v]);  // where the target wants more than the draft offered
    mass += missing[v];
  }
  if (!(mass > 0)) return p;  // p == q: a rejection cannot happen (but for rounding)
  for (double& m : missing) m /= mass;
  return missing;
}

Verdict verify_candidates(const Distribution& p, const Distribution& q, const std::vector<int>& candidates, Candidates how,
                          const Uniform& uniform) {
  Distribution target = p, proposal = q;
  for (std::size_t j = 0; j < candidates.size(); ++j) {
    const auto x = static_cast<std::size_t>(candidates[j]);
    // The single-draft rule against what is still owed: P(u < t/q) = min(1, t/q), and a token
    // the target no longer wants (t = 0) is never kept, whatever u is.
    if (uniform() < target[x] / proposal[x]) return {static_cast<int>(j), candidates[j]};
    // Rejected: what the target still owes is what this proposal under-covered. The residual
    // uses the proposal x was drawn from, before x leaves it.
    target = residual(target, proposal);
    if (how == Candidates::distinct) {
      // The next candidate was drawn without x: the proposal it came from.
      proposal[x] = 0.0;
      double rest = 0;
      for (double w : proposal) rest += w;
      for (double& w : proposal) w /= rest;
    }
  }
  // Every candidate rejected: the token comes from what the target still owes.
  return {-1, draw(target, uniform())};
}

}  // namespace exercise
