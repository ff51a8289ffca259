// Chapter 05, part 1b (admission by blocks): continuous batching when memory, not slots, is what
// runs out.
//
// Chapter 04's Scheduler admits whenever a slot is free, because each request brought its own
// cache. With one shared pool, a slot is cheap and a block is what counts:
//
//   admit    the longest-waiting request enters only if the pool has the blocks for its prompt
//            (less what the prefix cache already holds) plus what the running sequences need
//            for this step; otherwise admission stops for this step (nobody overtakes it)
//   reserve  before the step, every running sequence, oldest first, takes the blocks its new
//            positions need; when the pool is empty, the NEWEST running request is preempted:
//            its blocks go back to the pool and it waits at the front of the queue with the
//            tokens it has generated. Readmitted, it recomputes prompt + those tokens in one
//            prefill chunk (recomputation, as vLLM does by default, instead of swapping the
//            blocks out to host memory) and carries on where it stopped.
//
// Preempting the newest protects the oldest: the oldest running request always gets its
// blocks, so it finishes, frees them, and the queue moves — no request is ever lost or stuck,
// provided each request fits in the pool on its own, which submit() checks.
//
// The policy is chapter 04's Scheduler with its two seams (can_admit, before_run) filled in;
// it talks to a MemoryBoundEngine, so the unit tests drive it with a fake engine over a real
// BlockPool and no model.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "04_batching/request.hpp"
#include "04_batching/scheduler.hpp"
#include "paged_engine.hpp"  // MemoryBoundEngine

namespace infer {

class PagedScheduler : public Scheduler {
 public:
  PagedScheduler(int slots, MemoryBoundEngine& engine, Clock& clock);

  // Scheduler::submit, refusing (std::invalid_argument) a request that could never fit.
  void submit(Request& r);

  int64_t preemptions() const { return std::ssize(preempted_); }
  const std::vector<int>& preempted_ids() const { return preempted_; }  // in the order preempted
  int max_running() const { return max_running_; }                     // the most in one step

 protected:
  bool can_admit(const Request& r) override;
  void before_run() override;

 private:
  MemoryBoundEngine& engine_;
  std::vector<int> preempted_;
  int max_running_ = 0;
  std::unordered_map<const Request*, int64_t> admission_;  // order of the latest admission
  int64_t next_admission_ = 0;
};

// What a run of requests through a PagedScheduler did.
struct PagedRun {
  std::vector<Request> requests;  // with their records filled in
  std::vector<StepLog> steps;
  int64_t preemptions = 0;
  int max_running = 0;  // the most requests in one step
};

// Serves `requests` (fresh: nothing recorded) with up to `slots` running at once, admitted by
// free memory, on `engine` and `clock` — chapter 04's serve() for the paged policy.
PagedRun serve_paged(std::vector<Request> requests, int slots, MemoryBoundEngine& engine, Clock& clock);

}  // namespace infer
