#include "paged_scheduler.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

PagedScheduler::PagedScheduler(int slots, MemoryBoundEngine& engine, Clock& clock) : Scheduler(slots, engine, clock), engine_(engine) {}

void PagedScheduler::submit(Request& r) {
  if (!engine_.fits_alone(r))
    throw std::invalid_argument(fmt::format("request {}: {} prompt + {} new tokens do not fit in the block pool even alone", r.id,
                                            r.prompt.size(), r.max_new_tokens));
  Scheduler::submit(r);
}

// the-change: begin PagedScheduler::can_admit
bool PagedScheduler::can_admit(const Request& r) {
  // Also guards requests that reached the queue through Scheduler::submit: refusing one that can
  // never fit would stall the queue for ever.
  if (!engine_.fits_alone(r)) throw std::invalid_argument(fmt::format("request {} does not fit in the block pool even alone", r.id));
  if (!engine_.can_admit(r)) return false;
  admission_[&r] = next_admission_++;  // Scheduler admits it right after a yes
  return true;
}
// the-change: end PagedScheduler::can_admit

// the-change: begin PagedScheduler::before_run
void PagedScheduler::before_run() {
  // The running requests, oldest admission first (a readmitted request counts as new).
  std::vector<Request*> order;
  for (Request* r : slot_table())
    if (r != nullptr) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](Request* a, Request* b) { return admission_.at(a) < admission_.at(b); });

  // Oldest first, each takes its blocks; when the pool is out, the newest gives its blocks back.
  for (std::size_t i = 0; i < order.size(); ++i) {
    Request& r = *order[i];
    while (!engine_.reserve(r)) {
      if (order.size() == 1) throw std::logic_error(fmt::format("request {} alone does not get its blocks", r.id));
      Request* victim = order.back();
      order.pop_back();
      preempt(*victim);
      preempted_.push_back(victim->id);
      if (victim == &r) break;  // r was the newest itself: it waits, and the loop ends here
    }
  }
  max_running_ = std::max(max_running_, static_cast<int>(order.size()));
}
// the-change: end PagedScheduler::before_run

PagedRun serve_paged(std::vector<Request> requests, int slots, MemoryBoundEngine& engine, Clock& clock) {
  PagedRun run;
  run.requests = std::move(requests);
  PagedScheduler scheduler(slots, engine, clock);
  for (Request& r : run.requests) scheduler.submit(r);
  scheduler.run();
  run.steps = scheduler.log();
  run.preemptions = scheduler.preemptions();
  run.max_running = scheduler.max_running();
  return run;
}

}  // namespace infer
