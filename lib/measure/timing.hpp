// Timing helpers. Every figure the course prints is a median over repeats: one run of anything
// on a shared machine can be slowed by whatever else runs, the median of several is not.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <vector>

namespace infer {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

double median(std::vector<double> values);
double percentile(std::vector<double> values, double p);  // p in [0, 100], linear interpolation

// Runs `fn` once to warm up, then `repeats` times; returns the median seconds per run.
double median_seconds(int repeats, const std::function<void()>& fn);

// Times several pieces of work in turn: one warm-up round, then `repeats` rounds that run each
// piece once, in order; returns each piece's median seconds. The course's tables print ratios
// (a batch of 16 against a batch of 1, a draft's guess against a target step), and a machine
// whose speed drifts — another process, a neighbour's memory traffic — then slows both sides
// of a ratio alike; timed one piece after the other, a ratio moved with the drift.
// `after_round`, when given, runs untimed after each round (a progress bar's tick).
std::vector<double> medians_in_turn(int repeats, std::span<const std::function<void()>> work,
                                    const std::function<void()>& after_round = {});

}  // namespace infer
