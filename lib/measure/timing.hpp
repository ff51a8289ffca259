// Timing helpers. Every figure the course prints is a median over repeats: one run of anything
// on a shared machine can be slowed by whatever else runs, the median of several is not.
#pragma once

#include <chrono>
#include <functional>
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

}  // namespace infer
