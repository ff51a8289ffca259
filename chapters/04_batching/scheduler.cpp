#include "scheduler.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

Scheduler::Scheduler(int slots, StepEngine& engine, Clock& clock)
    : engine_(engine), clock_(clock), slots_(std::max(slots, 0), nullptr) {
  if (slots < 1) throw std::invalid_argument(fmt::format("Scheduler: {} slots (at least 1)", slots));
}

void Scheduler::submit(Request& r) {
  if (r.max_new_tokens < 1) throw std::invalid_argument(fmt::format("request {}: max_new_tokens {} (at least 1)", r.id, r.max_new_tokens));
  // After every request that arrives no later than r.
  const auto at = std::upper_bound(waiting_.begin(), waiting_.end(), r.arrival,
                                   [](double t, const Request* q) { return t < q->arrival; });
  waiting_.insert(at, &r);
}

int Scheduler::occupied() const {
  return static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Request* r) { return r != nullptr; }));
}

StepLog Scheduler::step() {
  StepLog entry;
  if (idle()) return entry;
  if (occupied() == 0 && waiting_.front()->arrival > clock_.now()) clock_.wait_until(waiting_.front()->arrival);

  // 1. Admit: the longest-waiting arrived request takes the lowest free slot.
  const double now = clock_.now();
  std::vector<Request*> admitted;
  for (Request*& slot : slots_) {
    if (slot != nullptr) continue;
    if (waiting_.empty() || waiting_.front()->arrival > now || !can_admit(*waiting_.front())) break;
    slot = waiting_.front();
    waiting_.pop_front();
    engine_.admit(*slot, slot->max_new_tokens);
    slot->admitted = now;
    admitted.push_back(slot);
    ++entry.admitted;
  }

  before_run();
  for (const Request* r : slots_) {  // who holds each slot in this step (after any preemption)
    const bool prefill = std::find(admitted.begin(), admitted.end(), r) != admitted.end();
    entry.slots.push_back(r == nullptr ? SlotUse{} : SlotUse{r->id, prefill ? SlotUse::prefill : SlotUse::decode});
  }

  // 2. Run one step over every occupied slot, in slot order.
  std::vector<Request*> batch;
  for (Request* r : slots_)
    if (r != nullptr) batch.push_back(r);
  if (batch.empty()) return entry;  // woke a moment before the arrival: nothing to run yet
  for (const Request* r : batch) entry.tokens_fed += r->tokens.empty() ? std::ssize(r->prompt) : 1;
  entry.batch = static_cast<int>(batch.size());
  entry.start = now;
  const std::vector<int32_t> next = engine_.step(batch);
  entry.end = clock_.now();
  if (next.size() != batch.size()) throw std::logic_error("StepEngine returned the wrong number of tokens");

  // 3. Record, and retire the finished at once.
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Request& r = *batch[i];
    r.tokens.push_back(next[i]);
    ++entry.useful;
    if (r.tokens.size() == 1) r.first_token = entry.end;
    if (r.done()) {
      r.finished = r.completed = entry.end;
      engine_.release(r);
      retired_.push_back(&r);
      *std::find(slots_.begin(), slots_.end(), &r) = nullptr;
      ++entry.retired;
    }
  }
  log_.push_back(entry);
  return entry;
}

void Scheduler::preempt(Request& r) {
  const auto slot = std::find(slots_.begin(), slots_.end(), &r);
  if (slot == slots_.end()) throw std::logic_error(fmt::format("request {} preempted without a slot", r.id));
  engine_.release(r);
  *slot = nullptr;
  waiting_.push_front(&r);
}

void Scheduler::run() {
  while (!idle()) step();
}

}  // namespace infer
