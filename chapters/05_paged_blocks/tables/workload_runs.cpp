#include "workload_runs.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "04_batching/workload/simulate.hpp"
#include "measure/progress.hpp"
#include "measure/timing.hpp"
#include "paged_engine.hpp"
#include "paged_scheduler.hpp"

namespace infer::paging {
namespace {

// After each step: positions the batch's sequences have written, bytes the layout reserves,
// and what a contiguous cache reserved for the length cap would hold for the same sequences.
struct MemorySample {
  int64_t written = 0;
  double reserved = 0, capped = 0;
};

// A StepEngine wrapper that records memory after every step (and advances a progress bar); the
// scheduler's memory questions go to the inner engine's memory side, if it has one.
class MeteredEngine : public MemoryBoundEngine {
 public:
  // `memory` is the engine's memory side (nullptr for chapter 04's, which never runs out);
  // `reserved` reads the bytes the layout holds now.
  MeteredEngine(const Context& cx, StepEngine& inner, MemoryBoundEngine* memory, std::function<double()> reserved, ProgressBar& bar)
      : cx_(cx), inner_(inner), memory_(memory), reserved_(std::move(reserved)), bar_(bar) {}
  void admit(const Request& r, int new_tokens) override { inner_.admit(r, new_tokens); }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    std::vector<int32_t> next = inner_.step(batch);
    MemorySample m;
    for (const Request* r : batch) {
      // The step stored the prompt and every token generated before this one.
      m.written += std::ssize(r->prompt) + std::ssize(r->tokens);
      m.capped += static_cast<double>(std::ssize(r->prompt) + cx_.s.max_len - 1);
    }
    m.capped *= static_cast<double>(cx_.bytes_per_token);
    m.reserved = reserved_();
    samples_.push_back(m);
    bar_.advance(std::ssize(batch));
    return next;
  }
  void release(const Request& r) override { inner_.release(r); }
  bool can_admit(const Request& r) const override { return memory_ == nullptr || memory_->can_admit(r); }
  bool reserve(const Request& r) override { return memory_ == nullptr || memory_->reserve(r); }
  bool fits_alone(const Request& r) const override { return memory_ == nullptr || memory_->fits_alone(r); }

  MemorySummary summary() const {
    MemorySummary s;
    if (samples_.empty()) return s;
    for (const MemorySample& m : samples_) {
      s.mean_reserved += m.reserved;
      s.mean_written += static_cast<double>(m.written) * static_cast<double>(cx_.bytes_per_token);
      s.mean_capped += m.capped;
      s.peak_reserved = std::max(s.peak_reserved, m.reserved);
    }
    const auto n = static_cast<double>(samples_.size());
    s.mean_reserved /= n;
    s.mean_written /= n;
    s.mean_capped /= n;
    return s;
  }

 private:
  const Context& cx_;
  StepEngine& inner_;
  MemoryBoundEngine* memory_;
  std::function<double()> reserved_;
  ProgressBar& bar_;
  std::vector<MemorySample> samples_;
};

}  // namespace

WorkloadRun run_contiguous(const Context& cx, const std::vector<Request>& requests, int slots) {
  BatchDecoder decoder(cx.m.model, cx.o.sampling);
  ProgressBar bar(fmt::format("workload, contiguous caches, {} slots", slots), total_new_tokens(requests));
  MeteredEngine engine(cx, decoder, nullptr, [&] { return static_cast<double>(decoder.cache_bytes()); }, bar);
  WallClock clock;
  Stopwatch watch;
  PolicyRun run = serve(Policy::continuous, requests, slots, engine, clock);
  bar.done();
  int most = 0;
  for (const StepLog& s : run.steps) most = std::max(most, s.batch);
  return {"contiguous", std::move(run.requests), std::move(run.steps), engine.summary(), watch.seconds(), 0, most};
}

WorkloadRun run_paged(const Context& cx, const std::vector<Request>& requests, int slots, int block_size, std::size_t budget,
                      bool prefix_caching) {
  PagedEngineOptions po;
  po.block_size = block_size;
  po.budget_bytes = budget;
  po.prefix_caching = prefix_caching;
  PagedEngine paged(cx.m.model, cx.o.sampling, po);
  ProgressBar bar(fmt::format("workload, paged, blocks of {}", block_size), total_new_tokens(requests));
  MeteredEngine engine(
      cx, paged, &paged, [&] { return static_cast<double>(paged.pool().used_blocks()) * static_cast<double>(paged.pool().bytes_per_block()); },
      bar);
  WallClock clock;
  Stopwatch watch;
  PagedRun run = serve_paged(requests, slots, engine, clock);
  bar.done();
  if (paged.pool().free_blocks() != paged.pool().num_blocks()) throw std::logic_error("blocks left in the pool after the run");
  return {fmt::format("paged, blocks of {}", block_size), std::move(run.requests), std::move(run.steps), engine.summary(),
          watch.seconds(), run.preemptions, run.max_running};
}

WorkloadRun replay(const Context& cx, const std::vector<Request>& requests, MemoryBoundEngine& engine, std::function<double()> reserved,
                   std::string layout) {
  ProgressBar bar(fmt::format("workload replayed, {}", layout), total_new_tokens(requests));
  MeteredEngine metered(cx, engine, &engine, std::move(reserved), bar);
  VirtualClock clock;  // nothing advances it: every request is queued at time 0
  PagedRun run = serve_paged(requests, static_cast<int>(requests.size()), metered, clock);
  bar.done();
  return {std::move(layout), std::move(run.requests), std::move(run.steps), metered.summary(), 0, run.preemptions, run.max_running};
}

}  // namespace infer::paging
