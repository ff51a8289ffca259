// Exercise 07 (the acceptance rule, several candidates) — your answer goes here (see README.md).
#include <stdexcept>

#include "acceptance_rule.hpp"

namespace exercise {

Distribution residual(const Distribution& p, const Distribution& q) {
  (void)p; (void)q;
  throw std::logic_error("exercise 07_acceptance_rule: residual is not written yet");
}

Verdict verify_candidates(const Distribution& p, const Distribution& q, const std::vector<int>& candidates, Candidates how,
                          const Uniform& uniform) {
  // One candidate after another. After a rejection, what must the next candidate be judged
  // against — and, for distinct candidates, what was the next one drawn from?
  (void)p; (void)q; (void)candidates; (void)how; (void)uniform;
  throw std::logic_error("exercise 07_acceptance_rule: verify_candidates is not written yet");
}

}  // namespace exercise
