// Exercise 07 (adaptive γ) — your answer goes here (see README.md).
#include <stdexcept>

#include "adaptive_gamma.hpp"

namespace exercise {

int best_gamma(double alpha, double draft_cost) {
  // Try every γ from 1 to kMaxGamma. What does the closed form of E(α, γ) do at α = 1?
  (void)alpha; (void)draft_cost;
  throw std::logic_error("exercise 07_adaptive_gamma: best_gamma is not written yet");
}

void record_round(AcceptanceEstimate& e, int gamma, int accepted) {
  // How many of the `gamma` guesses were actually checked?
  (void)e; (void)gamma; (void)accepted;
  throw std::logic_error("exercise 07_adaptive_gamma: record_round is not written yet");
}

int next_gamma(AcceptanceEstimate& e, double draft_cost) {
  (void)e; (void)draft_cost;
  throw std::logic_error("exercise 07_adaptive_gamma: next_gamma is not written yet");
}

}  // namespace exercise
