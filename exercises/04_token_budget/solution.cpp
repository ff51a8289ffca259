// Exercise 04 (token budget) — reference solution.
#include "budget_scheduler.hpp"

namespace exercise {

bool BudgetScheduler::can_admit(const infer::Request& r) {
  // Its prefill feeds the prompt, plus what it had generated if it was preempted.
  const auto tokens = static_cast<int64_t>(r.prompt.size() + r.tokens.size());
  // The first admission of a step always goes through: a prompt above the budget must not wait
  // for ever; it simply takes the whole step.
  if (admitted_tokens_ > 0 && admitted_tokens_ + tokens > budget_) return false;
  admitted_tokens_ += tokens;  // Scheduler admits r right after a yes
  return true;
}

void BudgetScheduler::before_run() {
  admitted_tokens_ = 0;  // the budget is per step: the next admission starts from zero
}

}  // namespace exercise
