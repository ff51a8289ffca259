// Grades exercise 04 (token budget) on chapter 04's simulation: a SimulatedEngine charging the
// measured step cost to a VirtualClock, so the scheduler runs exactly as it would on the model.
#include <algorithm>
#include <iostream>
#include <memory>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "budget_scheduler.hpp"
#include "simulate.hpp"  // chapter 04
#include "simulation.hpp"

namespace {

using exercise::make_request;

struct Run {
  std::vector<infer::Request> requests;
  std::vector<infer::StepLog> steps;
  bool finished = false;
};

// Steps at most max_steps times (a scheduler that never admits must fail the test, not hang it).
// budget < 0: chapter 04's plain Scheduler.
Run serve(std::vector<infer::Request> requests, int slots, int64_t budget, int max_steps = 2000) {
  const infer::StepCostModel cost = exercise::sweep_cost_model();
  infer::VirtualClock clock;
  infer::SimulatedEngine engine(cost, clock);
  std::unique_ptr<infer::Scheduler> s = budget < 0 ? std::make_unique<infer::Scheduler>(slots, engine, clock)
                                                   : std::make_unique<exercise::BudgetScheduler>(slots, engine, clock, budget);
  for (infer::Request& r : requests) s->submit(r);
  for (int n = 0; n < max_steps && !s->idle(); ++n) s->step();
  return {requests, s->log(), s->idle()};
}

// Prompt tokens a step prefilled: everything fed except one decode token per running request.
int64_t prefill_tokens(const infer::StepLog& step) { return step.tokens_fed - (step.batch - step.admitted); }

std::vector<infer::Request> same_prompts(int n, int prompt_tokens, int new_tokens) {
  std::vector<infer::Request> rs;
  for (int i = 0; i < n; ++i) rs.push_back(make_request(i, prompt_tokens, new_tokens));
  return rs;
}

// The scheduler with its two seams opened to the test, to ask can_admit directly.
struct OpenBudgetScheduler : exercise::BudgetScheduler {
  using BudgetScheduler::BudgetScheduler;
  using BudgetScheduler::before_run;
  using BudgetScheduler::can_admit;
};

}  // namespace

TEST_CASE("a preempted request counts the tokens it already has", "[exercise]") {
  // Readmitted after preemption, a request's prefill recomputes its prompt AND the 12 tokens it
  // had generated: 22 tokens of the budget of 25, so a 10-token prompt behind it must wait.
  infer::VirtualClock clock;
  infer::SimulatedEngine engine(exercise::sweep_cost_model(), clock);
  OpenBudgetScheduler s(8, engine, clock, 25);
  infer::Request back = make_request(0, 10, 20), next = make_request(1, 10, 5);
  back.tokens.assign(12, 7);
  CHECK(s.can_admit(back));   // the first of a step always
  CHECK_FALSE(s.can_admit(next));  // 22 + 10 > 25
  s.before_run();
  CHECK(s.can_admit(next));   // a new step
  const infer::Request small = make_request(2, 3, 5);
  CHECK(s.can_admit(small));  // 10 + 3 ≤ 25
}

TEST_CASE("no step prefills more than the budget", "[exercise]") {
  const Run run = serve(same_prompts(6, 10, 5), 8, 25);
  REQUIRE(run.finished);
  REQUIRE(!run.steps.empty());
  CHECK(run.steps[0].admitted == 2);  // 10 + 10 fit in 25, a third would not
  for (const infer::StepLog& s : run.steps) CHECK(prefill_tokens(s) <= 25);
}

TEST_CASE("the budget renews at every step", "[exercise]") {
  const Run run = serve(same_prompts(6, 10, 5), 8, 25);
  REQUIRE(run.steps.size() >= 3);
  CHECK(run.steps[1].admitted == 2);
  CHECK(run.steps[2].admitted == 2);
  for (const infer::Request& r : run.requests) CHECK(std::ssize(r.tokens) == 5);
}

TEST_CASE("prompts that fill the budget exactly are admitted", "[exercise]") {
  const Run run = serve(same_prompts(6, 10, 5), 8, 30);
  REQUIRE(!run.steps.empty());
  CHECK(run.steps[0].admitted == 3);
}

TEST_CASE("a prompt longer than the budget is admitted alone", "[exercise]") {
  const Run run = serve(same_prompts(3, 100, 4), 8, 25);
  REQUIRE(run.finished);  // nobody waits for ever
  for (const infer::StepLog& s : run.steps) CHECK(s.admitted <= 1);
}

TEST_CASE("figure: a burst of prompts against four running answers", "[exercise][figure]") {
  // Four long answers are decoding when 16 requests with 128-token prompts arrive at t = 1 s.
  std::vector<infer::Request> rs;
  for (int i = 0; i < 4; ++i) rs.push_back(make_request(i, 16, 200));
  for (int i = 4; i < 20; ++i) rs.push_back(make_request(i, 128, 20, 1.0));
  std::cout << "4 answers of 200 tokens running; 16 prompts of 128 tokens arrive at t = 1 s (32 slots, measured step costs)\n"
               "  budget (prompt tokens/step)   longest step = worst wait between two tokens   mean TTFT of the burst\n";
  for (int64_t budget : {-1, 512, 256, 128}) {
    const Run run = serve(rs, 32, budget);
    REQUIRE(run.finished);
    double longest = 0, ttft = 0;
    for (const infer::StepLog& s : run.steps) longest = std::max(longest, s.end - s.start);
    for (int i = 4; i < 20; ++i) ttft += run.requests[i].ttft() / 16;
    std::cout << fmt::format("  {:>28}   {:>44.2f} s   {:>20.2f} s\n", budget < 0 ? std::string("none") : std::to_string(budget),
                             longest, ttft);
  }
}
