// Exercise 04 — shortest-job-first admission.
#pragma once

#include <vector>

#include "request.hpp"  // chapter 04

namespace exercise {

// Returns the requests in the order to submit them to chapter 04's Scheduler so that it admits
// shortest-job-first: by arrival time (the scheduler never admits a request before it arrives),
// and among requests that arrive at the same time, fewest max_new_tokens first; equal lengths
// keep their original order (so nobody is reordered without a reason).
std::vector<infer::Request> shortest_job_first(std::vector<infer::Request> requests);

}  // namespace exercise
