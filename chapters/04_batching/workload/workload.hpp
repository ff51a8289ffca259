// Chapter 04, part 2 (a workload to serve), file 1: the skewed workload, and what a run of it
// achieved.
//
// Real answers are not all the same length: most are short, a few are very long. The output
// lengths here are drawn from a log-normal distribution (heavy right tail) with a seeded
// generator; the default seed gives the course's shape for 64 requests — median 18 tokens,
// longest 231, 1 873 in total (the course: 1 874). Requests arrive one after the other with exponential gaps
// (a Poisson stream), and their prompts are drawn from a small fixed list of short texts of
// different lengths.
//
// The draws use std::mt19937_64, whose output the C++ standard fixes, turned into uniforms,
// normals (Box–Muller) and exponentials by our own code: the same seed gives the same workload
// with every compiler and library.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "batch_decode.hpp"
#include "request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer {

struct WorkloadOptions {
  int requests = 64;
  uint64_t seed = 0;        // 0: kWorkloadSeed
  double median = 18;       // of the output lengths (the log-normal's e^μ)
  double sigma = 1.05;      // of the lengths' logarithm: the heaviness of the tail
  int max_tokens = 256;     // lengths are capped here
  double mean_gap = 0;      // seconds between arrivals on average; 0: all arrive at time 0
};

// The seed whose first 64 draws (sigma 1.05) come closest to the course's workload: median 18,
// longest 231, total 1 873 (found by trying seeds 1 … 41009 against median 18, max 231, total 1 874).
inline constexpr uint64_t kWorkloadSeed = 41009;

// The output lengths alone (the first n draws of the seeded stream).
std::vector<int> draw_output_lengths(int n, uint64_t seed, double median, double sigma, int max_tokens);

// The short prompts the requests draw from.
const std::vector<std::string>& workload_prompts();

// The requests, ids 0 … n−1 in arrival order.
std::vector<Request> make_workload(const Tokenizer& tokenizer, const WorkloadOptions& options);

// What a run of a workload achieved, from its requests' records and its steps.
struct ServeSummary {
  int requests = 0;
  int64_t tokens = 0;          // generated tokens handed back
  double total_seconds = 0;    // first arrival → last completion
  double throughput = 0;       // tokens / total_seconds
  double mean_latency = 0, p50_latency = 0, p99_latency = 0;
  double mean_ttft = 0, p50_ttft = 0, p99_ttft = 0;
  int64_t steps = 0;
  int64_t rows = 0;            // request-rows stepped (Σ batch over steps)
  int64_t padding_rows = 0;    // rows whose token was thrown away (static batching)
  double mean_batch() const { return steps > 0 ? static_cast<double>(rows) / static_cast<double>(steps) : 0; }
};
ServeSummary summarize(std::span<const Request> requests, std::span<const StepLog> steps);

}  // namespace infer
