// Chapter 04's layer, file 3: static batching, the naive way to share a step.
//
//   take the next B requests in arrival order; wait until the last of them has arrived
//   step all B together: one prefill step, then decode steps …
//   … until the LONGEST of them has all its tokens; only then hand all B back; repeat
//
// A member that finishes early keeps its place: it is stepped along with the others (its rows
// cost the same as real ones and their tokens are thrown away — padding), its answer is not
// returned, and nobody can take its slot. So every member's latency is the batch's longest
// answer, and the machine spends part of every step on padding. The continuous Scheduler
// (scheduler.hpp) removes both.
#pragma once

#include <deque>
#include <vector>

#include "batch_decode.hpp"
#include "request.hpp"

namespace infer {

class StaticBatcher {
 public:
  StaticBatcher(int batch_size, StepEngine& engine, Clock& clock);

  void submit(Request& r);  // queued in arrival order, like Scheduler::submit
  // Runs the next batch to completion; false when nothing was waiting.
  bool run_batch();
  void run();  // every batch

  int batch_size() const { return batch_size_; }
  const std::vector<StepLog>& log() const { return log_; }
  const std::vector<std::vector<int>>& batches() const { return batches_; }  // request ids per batch

 private:
  int batch_size_;
  StepEngine& engine_;
  Clock& clock_;
  std::deque<Request*> waiting_;
  std::vector<StepLog> log_;
  std::vector<std::vector<int>> batches_;
};

}  // namespace infer
