// Chapter 04, part 2 (a workload to serve), file 2: the two policies run against a cost model
// instead of the model.
//
// A step's time depends, to a good approximation, only on how many tokens it feeds: the weights
// are streamed once whatever the batch, and each extra token adds its share of arithmetic and
// of cache reads. The batch sweep measures that function (B one-token decode steps, B = 1 … 64);
// the simulation replays the very same StaticBatcher and Scheduler code on a VirtualClock that
// a SimulatedEngine advances by cost(tokens fed) per step. If the simulation and the real run
// agree, the per-step cost is the whole story; where they differ, something else (prefill
// attention, allocation, the machine's other load) is at work.
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch_decode.hpp"
#include "request.hpp"
#include "workload.hpp"

namespace infer {

// Step seconds as a function of the tokens fed: piecewise linear through measured points;
// below the first point its value, beyond the last the last segment extended.
class StepCostModel {
 public:
  StepCostModel(std::vector<double> tokens, std::vector<double> seconds);
  double operator()(double tokens) const;
  const std::vector<double>& tokens() const { return tokens_; }
  const std::vector<double>& seconds() const { return seconds_; }

 private:
  std::vector<double> tokens_, seconds_;
};

// The sweep's points (B one-token rows → step seconds) as a cost model.
StepCostModel cost_model_from(std::span<const DecodeTiming> sweep);

// Charges cost(tokens fed) to the clock at every step; every token it "generates" is 0.
class SimulatedEngine : public StepEngine {
 public:
  SimulatedEngine(const StepCostModel& cost, VirtualClock& clock) : cost_(cost), clock_(clock) {}
  void admit(const Request& r, int new_tokens) override { prefilled_[r.id] = false; }
  std::vector<int32_t> step(std::span<Request* const> batch) override;
  void release(const Request& r) override { prefilled_.erase(r.id); }

 private:
  const StepCostModel& cost_;
  VirtualClock& clock_;
  std::unordered_map<int, bool> prefilled_;
};

enum class Policy { static_batches, continuous };
std::string policy_name(Policy p);

struct PolicyRun {
  std::vector<Request> requests;  // with their records filled in
  std::vector<StepLog> steps;
  ServeSummary summary;
};

// Serves `requests` (fresh: nothing recorded) with `slots` slots under `policy`, on `engine`
// and `clock`.
PolicyRun serve(Policy policy, std::vector<Request> requests, int slots, StepEngine& engine, Clock& clock);

// The same on the cost model.
PolicyRun simulate(Policy policy, std::vector<Request> requests, int slots, const StepCostModel& cost);

}  // namespace infer
