#include "workload.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/timing.hpp"

namespace infer {
namespace {

// Uniform in (0, 1): the top 53 bits of a 64-bit draw, never exactly 0.
double uniform(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

// Standard normal by Box–Muller (one of the pair).
double normal(std::mt19937_64& rng) {
  const double u1 = uniform(rng), u2 = uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

std::vector<int> draw_output_lengths(int n, uint64_t seed, double median, double sigma, int max_tokens) {
  if (n < 1 || median <= 0 || sigma < 0 || max_tokens < 1)
    throw std::invalid_argument("draw_output_lengths: non-positive count, median or cap, or negative sigma");
  std::mt19937_64 rng(seed);
  std::vector<int> lengths(n);
  for (int& len : lengths) {
    const double x = median * std::exp(sigma * normal(rng));
    len = std::clamp(static_cast<int>(std::lround(x)), 1, max_tokens);
  }
  return lengths;
}

const std::vector<std::string>& workload_prompts() {
  static const std::vector<std::string> prompts = {
      "The capital of France is",
      "Write a short poem about the sea.",
      "def fibonacci(n):",
      "Explain why the sky is blue in simple words:",
      "Once upon a time, in a small village at the edge of a forest,",
      "The three laws of thermodynamics are",
      "List three healthy breakfast ideas:",
      "Translate to French: Good morning, how are you today?",
  };
  return prompts;
}

std::vector<Request> make_workload(const Tokenizer& tokenizer, const WorkloadOptions& o) {
  if (o.mean_gap < 0) throw std::invalid_argument("make_workload: negative mean gap");
  const uint64_t seed = o.seed == 0 ? kWorkloadSeed : o.seed;
  const std::vector<int> lengths = draw_output_lengths(o.requests, seed, o.median, o.sigma, o.max_tokens);
  // Arrivals and prompt choices from their own streams, so that changing the arrival rate
  // leaves the lengths and prompts as they were.
  std::mt19937_64 arrivals(seed ^ 0xa5a5a5a5ULL), choice(seed ^ 0x5a5a5a5aULL);
  std::vector<std::vector<int32_t>> encoded;
  for (const std::string& p : workload_prompts()) encoded.push_back(tokenizer.encode(p));

  std::vector<Request> requests(o.requests);
  double t = 0;
  for (int i = 0; i < o.requests; ++i) {
    Request& r = requests[i];
    r.id = i;
    r.prompt = encoded[choice() % encoded.size()];
    r.max_new_tokens = lengths[i];
    if (i > 0 && o.mean_gap > 0) t += -std::log(uniform(arrivals)) * o.mean_gap;
    r.arrival = t;
  }
  return requests;
}

ServeSummary summarize(std::span<const Request> requests, std::span<const StepLog> steps) {
  ServeSummary s;
  if (requests.empty()) return s;
  std::vector<double> latency, ttft;
  double first_arrival = requests.front().arrival, last_completion = 0;
  for (const Request& r : requests) {
    if (r.completed < 0) throw std::logic_error(fmt::format("request {} never completed", r.id));
    s.tokens += std::ssize(r.tokens);
    latency.push_back(r.latency());
    ttft.push_back(r.ttft());
    first_arrival = std::min(first_arrival, r.arrival);
    last_completion = std::max(last_completion, r.completed);
  }
  s.requests = static_cast<int>(requests.size());
  s.total_seconds = last_completion - first_arrival;
  s.throughput = s.total_seconds > 0 ? static_cast<double>(s.tokens) / s.total_seconds : 0;
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  s.mean_latency = mean(latency);
  s.p50_latency = percentile(latency, 50);
  s.p99_latency = percentile(latency, 99);
  s.mean_ttft = mean(ttft);
  s.p50_ttft = percentile(ttft, 50);
  s.p99_ttft = percentile(ttft, 99);
  for (const StepLog& st : steps) {
    ++s.steps;
    s.rows += st.batch;
    s.padding_rows += st.batch - st.useful;
  }
  return s;
}

}  // namespace infer
