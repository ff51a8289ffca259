// Exercise 07 (adaptive γ) — reference solution.
#include <algorithm>

#include "adaptive_gamma.hpp"

namespace exercise {

namespace {
// How much of the past each round keeps: the estimate covers roughly the last 1 / (1 − 0.98) = 50
// rounds, so it follows a change of text within a few dozen rounds. 1.0 would never forget.
constexpr double kKeep = 0.98;
}  // namespace

int best_gamma(double alpha, double draft_cost) {
  int best = 0;
  double best_speedup = 1.0;  // plain decoding: one token per target step
  double expected = 1.0;      // E(α, γ) built up as a sum — no 0/0 at α = 1
  double alpha_power = 1.0;
  for (int gamma = 1; gamma <= kMaxGamma; ++gamma) {
    alpha_power *= alpha;
    expected += alpha_power;
    const double speedup = expected / (gamma * draft_cost + 1.0);
    if (speedup > best_speedup) best = gamma, best_speedup = speedup;  // strictly: ties keep the smaller γ
  }
  return best;
}

void record_round(AcceptanceEstimate& e, int gamma, int accepted) {
  if (gamma <= 0) return;
  // The guesses were checked in order up to the first rejection: all `gamma` if every one stood,
  // otherwise the kept ones and the one that failed.
  const int checked = std::min(gamma, accepted + 1);
  e.checked = kKeep * e.checked + checked;
  e.kept = kKeep * e.kept + accepted;
  e.alpha = e.kept / e.checked;
  e.plain_steps = 0;
}

int next_gamma(AcceptanceEstimate& e, double draft_cost) {
  const int gamma = best_gamma(e.alpha, draft_cost);
  if (gamma > 0) return gamma;
  // Not speculating means no rounds, and no rounds means the estimate never changes again: probe.
  return ++e.plain_steps % kProbeEvery == 0 ? 1 : 0;
}

}  // namespace exercise
