// Exercise 04 (token budget) — your answer goes here (see README.md).
#include <stdexcept>

#include "budget_scheduler.hpp"

namespace exercise {

bool BudgetScheduler::can_admit(const infer::Request& r) {
  // How many tokens would r's prefill feed? Does it fit in what is left of this step's budget?
  // What if it is the first request of the step?
  (void)r;
  throw std::logic_error("exercise 04_token_budget: BudgetScheduler::can_admit is not written yet");
}

void BudgetScheduler::before_run() {
  // Admission for this step is over: what must be ready for the next step's admission?
}

}  // namespace exercise
