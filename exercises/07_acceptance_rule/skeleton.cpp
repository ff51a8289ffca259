// Exercise 07 (the acceptance rule) — your answer goes here (see README.md).
#include <stdexcept>

#include "acceptance_rule.hpp"

namespace exercise {

Distribution residual(const Distribution& p, const Distribution& q) {
  (void)p; (void)q;
  throw std::logic_error("exercise 07_acceptance_rule: residual is not written yet");
}

RoundResult accept_round(const std::vector<Distribution>& p, const std::vector<int>& guesses,
                         const std::vector<Distribution>& q, const Uniform& uniform) {
  // Walk the guesses in order. Which uniform decides a guess, and which one draws the token?
  (void)p; (void)guesses; (void)q; (void)uniform;
  throw std::logic_error("exercise 07_acceptance_rule: accept_round is not written yet");
}

}  // namespace exercise
