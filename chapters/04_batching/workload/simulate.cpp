#include "simulate.hpp"

#include <algorithm>
#include <stdexcept>

#include "scheduler.hpp"
#include "static_batcher.hpp"

namespace infer {

StepCostModel::StepCostModel(std::vector<double> tokens, std::vector<double> seconds)
    : tokens_(std::move(tokens)), seconds_(std::move(seconds)) {
  if (tokens_.empty() || tokens_.size() != seconds_.size())
    throw std::invalid_argument("StepCostModel: needs as many times as token counts, at least one");
  if (!std::is_sorted(tokens_.begin(), tokens_.end()) ||
      std::adjacent_find(tokens_.begin(), tokens_.end()) != tokens_.end())
    throw std::invalid_argument("StepCostModel: token counts must be strictly increasing");
}

double StepCostModel::operator()(double n) const {
  if (tokens_.size() == 1 || n <= tokens_.front()) return seconds_.front();
  // The segment containing n, or the last one when n is beyond the measured range.
  int64_t i = std::upper_bound(tokens_.begin(), tokens_.end(), n) - tokens_.begin();
  i = std::min(i, std::ssize(tokens_) - 1);
  const double x0 = tokens_[i - 1], x1 = tokens_[i], y0 = seconds_[i - 1], y1 = seconds_[i];
  return y0 + (y1 - y0) * (n - x0) / (x1 - x0);
}

StepCostModel cost_model_from(std::span<const DecodeTiming> sweep) {
  std::vector<double> tokens, seconds;
  for (const DecodeTiming& t : sweep) {
    tokens.push_back(t.batch);
    seconds.push_back(t.seconds);
  }
  return StepCostModel(std::move(tokens), std::move(seconds));
}

// the-change: begin SimulatedEngine::step
std::vector<int32_t> SimulatedEngine::step(std::span<Request* const> batch) {
  double fed = 0;
  for (const Request* r : batch) {
    bool& prefilled = prefilled_.at(r->id);
    fed += prefilled ? 1.0 : static_cast<double>(r->prompt.size());
    prefilled = true;
  }
  clock_.advance(cost_(fed));
  return std::vector<int32_t>(batch.size(), 0);
}
// the-change: end SimulatedEngine::step

std::string policy_name(Policy p) { return p == Policy::static_batches ? "static" : "continuous"; }

// the-change: begin serve
PolicyRun serve(Policy policy, std::vector<Request> requests, int slots, StepEngine& engine, Clock& clock) {
  PolicyRun run;
  run.requests = std::move(requests);
  if (policy == Policy::static_batches) {
    StaticBatcher batcher(slots, engine, clock);
    for (Request& r : run.requests) batcher.submit(r);
    batcher.run();
    run.steps = batcher.log();
  } else {
    Scheduler scheduler(slots, engine, clock);
    for (Request& r : run.requests) scheduler.submit(r);
    scheduler.run();
    run.steps = scheduler.log();
  }
  run.summary = summarize(run.requests, run.steps);
  return run;
}
// the-change: end serve

// the-change: begin simulate
PolicyRun simulate(Policy policy, std::vector<Request> requests, int slots, const StepCostModel& cost) {
  VirtualClock clock;
  SimulatedEngine engine(cost, clock);
  return serve(policy, std::move(requests), slots, engine, clock);
}
// the-change: end simulate

}  // namespace infer
