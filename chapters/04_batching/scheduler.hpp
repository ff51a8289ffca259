// Chapter 04's layer, file 4: continuous (iteration-level) batching.
//
// Static batching treats the batch as a group; continuous batching treats it as a set of slots.
// The Scheduler decides at every step — at the granularity of one token, not of one request:
//
//   step():  1. admit   waiting requests that have arrived, first come first served, into free
//                       slots; each one's prefill runs inside this very step
//            2. run     one step over every occupied slot: prefill chunks for the admitted,
//                       one-token decode chunks for the others, all in one forward
//            3. retire  every request that has its last token leaves at once: it is handed back
//                       to its user now, and its slot is free for the next step's admission
//
// Nothing waits for a neighbour: a 4-token answer is back after 4 steps even when a 231-token
// answer shares its batch. The bookkeeping knows nothing of the model — it talks to a
// StepEngine and reads a Clock — so it is tested with a fake engine and a VirtualClock.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "batch_decode.hpp"
#include "request.hpp"

namespace infer {

class Scheduler {
 public:
  Scheduler(int slots, StepEngine& engine, Clock& clock);
  virtual ~Scheduler() = default;

  // Queues a request (it waits until its arrival time has passed). The queue is kept in
  // arrival order; requests arriving at the same time keep their submission order.
  void submit(Request& r);

  // One iteration: admit, run, retire (above). When no request runs and the next one has not
  // arrived yet, it first waits for it. Returns what the step did (batch 0: nothing to do).
  StepLog step();
  void run();  // steps until nothing is waiting or running

  bool idle() const { return waiting_.empty() && occupied() == 0; }
  int slots() const { return static_cast<int>(slots_.size()); }
  int occupied() const;
  std::size_t waiting() const { return waiting_.size(); }
  const std::vector<Request*>& slot_table() const { return slots_; }  // nullptr: free
  const std::vector<Request*>& retired() const { return retired_; }   // in the order they finished
  const std::vector<StepLog>& log() const { return log_; }

 protected:
  // the-change: begin Scheduler::seams
  // The admission policy. This scheduler's: a free slot is all a request needs and nothing is
  // ever taken back; a scheduler whose memory can run out overrides them.
  //   can_admit   asked before the longest-waiting arrived request takes a free slot; false
  //               stops admission for this step (first come, first served: nobody overtakes it)
  //   before_run  called after admission, before the step: the place to preempt()
  virtual bool can_admit(const Request& r) { return true; }
  virtual void before_run() {}
  // r leaves its slot, the engine frees its memory, and it waits at the FRONT of the queue with
  // the tokens it has so far (the engine recomputes them when it is admitted again).
  void preempt(Request& r);
  // the-change: end Scheduler::seams

 private:
  StepEngine& engine_;
  Clock& clock_;
  std::vector<Request*> slots_;
  std::deque<Request*> waiting_;
  std::vector<Request*> retired_;
  std::vector<StepLog> log_;
};

}  // namespace infer
