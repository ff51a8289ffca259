#include "measure/timing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace infer {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) throw std::invalid_argument("percentile of no values");
  std::sort(values.begin(), values.end());
  const double pos = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double median(std::vector<double> values) { return percentile(std::move(values), 50.0); }

double median_seconds(int repeats, const std::function<void()>& fn) {
  fn();  // warm-up: caches, page faults, thread pools
  std::vector<double> times;
  for (int i = 0; i < std::max(1, repeats); ++i) {
    Stopwatch sw;
    fn();
    times.push_back(sw.seconds());
  }
  return median(times);
}

std::vector<double> medians_in_turn(int repeats, std::span<const std::function<void()>> work,
                                    const std::function<void()>& after_round) {
  std::vector<std::vector<double>> seconds(work.size());
  for (int round = -1; round < std::max(1, repeats); ++round) {  // round −1 warms up and is not kept
    for (std::size_t i = 0; i < work.size(); ++i) {
      const Stopwatch clock;
      work[i]();
      if (round >= 0) seconds[i].push_back(clock.seconds());
    }
    if (after_round) after_round();
  }
  std::vector<double> medians;
  for (std::vector<double>& s : seconds) medians.push_back(median(std::move(s)));
  return medians;
}

}  // namespace infer
