// Table 2, the sequences that then fit: one fixed K/V budget (what --slots contiguous
// reservations need, or --budget-mib), served contiguous (as many slots as reservations fit) and
// paged (as many sequences as their actual lengths allow, admission and preemption by free
// blocks). Why: the memory table 1 shows unwritten becomes room for more sequences per step.
#pragma once

#include <cstdint>
#include <vector>

#include "04_batching/request.hpp"
#include "paging_tables.hpp"
#include "workload_runs.hpp"

namespace infer::paging {

// Table 2's budget: --budget-mib, or what `slots` contiguous reservations of the longest prompt
// plus the cap need.
struct Budget {
  double bytes = 0, per_sequence = 0;
  int64_t positions = 0;  // of one contiguous reservation
  int contiguous_fit = 0;
};

// The budget for `requests`; throws UsageError when it cannot hold one sequence, contiguous or
// in blocks of --block-size (called before any run, so a bad flag costs no time).
Budget fixed_budget(const Context& cx, const std::vector<Request>& requests);
// Prints table 2. `contiguous8` is table 1's contiguous run, reused when the budget holds
// exactly --slots reservations.
void budget_table(const Context& cx, const std::vector<Request>& requests, const Budget& b, const WorkloadRun& contiguous8);

}  // namespace infer::paging
