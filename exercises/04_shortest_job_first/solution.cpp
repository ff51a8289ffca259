// Exercise 04 (shortest job first) — reference solution.
#include <algorithm>

#include "shortest_job_first.hpp"

namespace exercise {

std::vector<infer::Request> shortest_job_first(std::vector<infer::Request> requests) {
  // Stable: equal keys keep their submission order, which the scheduler preserves in turn.
  std::stable_sort(requests.begin(), requests.end(), [](const infer::Request& a, const infer::Request& b) {
    if (a.arrival != b.arrival) return a.arrival < b.arrival;
    return a.max_new_tokens < b.max_new_tokens;  // the job's length is the answer's, not the prompt's
  });
  return requests;
}

}  // namespace exercise
