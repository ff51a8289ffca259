// Table 1, the memory paging recovers: chapter 04's workload run for real, contiguous (chapter
// 04's caches, and what a server reserving prompt + the length cap would hold) and paged in
// blocks of 8, 16 and 32, with the bytes reserved against the bytes written after every step.
// Why: the reservation a contiguous cache must make before it knows an answer's length is
// mostly never written (internal fragmentation); blocks waste at most the tail of the last one.
#pragma once

#include <vector>

#include "04_batching/request.hpp"
#include "paging_tables.hpp"
#include "workload_runs.hpp"

namespace infer::paging {

struct WorkloadRuns {
  WorkloadRun contiguous;
  std::vector<WorkloadRun> paged;  // one per kBlockSizes
};

// Prints table 1 and returns its runs, which tables 2 and 5 reuse.
WorkloadRuns memory_table(const Context& cx, const std::vector<Request>& requests);

}  // namespace infer::paging
