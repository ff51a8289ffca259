#include "static_batcher.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

StaticBatcher::StaticBatcher(int batch_size, StepEngine& engine, Clock& clock)
    : batch_size_(batch_size), engine_(engine), clock_(clock) {
  if (batch_size < 1) throw std::invalid_argument(fmt::format("StaticBatcher: batch size {} (at least 1)", batch_size));
}

void StaticBatcher::submit(Request& r) {
  if (r.max_new_tokens < 1) throw std::invalid_argument(fmt::format("request {}: max_new_tokens {} (at least 1)", r.id, r.max_new_tokens));
  const auto at = std::upper_bound(waiting_.begin(), waiting_.end(), r.arrival,
                                   [](double t, const Request* q) { return t < q->arrival; });
  waiting_.insert(at, &r);
}

bool StaticBatcher::run_batch() {
  if (waiting_.empty()) return false;
  std::vector<Request*> batch;
  while (!waiting_.empty() && std::ssize(batch) < batch_size_) {
    batch.push_back(waiting_.front());
    waiting_.pop_front();
  }
  // The batch starts when its last member has arrived, and it lasts as long as its longest.
  clock_.wait_until(batch.back()->arrival);
  int longest = 0;
  for (const Request* r : batch) longest = std::max(longest, r->max_new_tokens);
  const double start = clock_.now();
  std::vector<int> ids;
  for (Request* r : batch) {
    engine_.admit(*r, longest);  // room for the padding steps after its own last token
    r->admitted = start;
    ids.push_back(r->id);
  }
  batches_.push_back(std::move(ids));

  for (int s = 0; s < longest; ++s) {
    StepLog entry;
    entry.batch = static_cast<int>(batch.size());
    entry.admitted = s == 0 ? entry.batch : 0;
    for (const Request* r : batch) {
      entry.tokens_fed += s == 0 ? std::ssize(r->prompt) : 1;
      entry.slots.push_back({r->id, s == 0 ? SlotUse::prefill : r->done() ? SlotUse::padding : SlotUse::decode});
    }
    entry.slots.resize(static_cast<std::size_t>(batch_size_));  // a short last batch: the rest idle
    entry.start = clock_.now();
    const std::vector<int32_t> next = engine_.step(batch);
    entry.end = clock_.now();
    if (next.size() != batch.size()) throw std::logic_error("StepEngine returned the wrong number of tokens");
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Request& r = *batch[i];
      if (r.done()) continue;  // a padding row: computed, thrown away
      r.tokens.push_back(next[i]);
      ++entry.useful;
      if (r.tokens.size() == 1) r.first_token = entry.end;
      if (r.done()) r.finished = entry.end;  // finished, but not handed back yet
    }
    if (s == longest - 1) entry.retired = entry.batch;
    log_.push_back(entry);
  }
  // Only now does anyone get an answer.
  const double end = clock_.now();
  for (Request* r : batch) {
    r->completed = end;
    engine_.release(*r);
  }
  return true;
}

void StaticBatcher::run() {
  while (run_batch()) {
  }
}

}  // namespace infer
