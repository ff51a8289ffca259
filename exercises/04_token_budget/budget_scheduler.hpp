// Exercise 04 — a per-step token budget for the continuous scheduler.
#pragma once

#include <cstdint>

#include "scheduler.hpp"  // chapter 04

namespace exercise {

// Chapter 04's Scheduler, admitting new requests only while the prompt tokens prefilled in one
// step stay within `token_budget` (a request readmitted after preemption recomputes its prompt
// and the tokens it has, so it counts both). The first request of a step is always admitted,
// however long its prompt: otherwise a prompt longer than the budget would wait for ever.
// Admission stays first come, first served: when the next request does not fit, nobody behind
// it is admitted this step.
class BudgetScheduler : public infer::Scheduler {
 public:
  BudgetScheduler(int slots, infer::StepEngine& engine, infer::Clock& clock, int64_t token_budget)
      : Scheduler(slots, engine, clock), budget_(token_budget) {}

 protected:
  // YOUR PART: the two seams chapter 04's Scheduler calls at every step (scheduler.hpp):
  // can_admit for each candidate during admission, then before_run once admission is over.
  bool can_admit(const infer::Request& r) override;
  void before_run() override;

 private:
  int64_t budget_;
  int64_t admitted_tokens_ = 0;  // prompt tokens admitted so far in the current step
};

}  // namespace exercise
