// Grades exercise 04 (shortest job first): the order itself, then its effect on chapter 04's
// continuous batching, simulated with the measured step costs.
#include <iostream>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "shortest_job_first.hpp"
#include "simulate.hpp"  // chapter 04
#include "simulation.hpp"
#include "workload.hpp"  // chapter 04: draw_output_lengths, kWorkloadSeed

namespace {

using exercise::make_request;

std::vector<int> ids(const std::vector<infer::Request>& rs) {
  std::vector<int> out;
  for (const infer::Request& r : rs) out.push_back(r.id);
  return out;
}

// Chapter 04's 64-request workload (its seeded output lengths), all arriving at once.
std::vector<infer::Request> course_workload() {
  const auto lengths = infer::draw_output_lengths(64, infer::kWorkloadSeed, 18, 1.05, 256);
  std::vector<infer::Request> rs;
  for (int i = 0; i < 64; ++i) rs.push_back(make_request(i, 12, lengths[i]));
  return rs;
}

}  // namespace

TEST_CASE("shorter answers first", "[exercise]") {
  const auto out = exercise::shortest_job_first({make_request(0, 5, 30), make_request(1, 50, 2), make_request(2, 1, 10)});
  CHECK(ids(out) == std::vector<int>{1, 2, 0});
}

TEST_CASE("the job is the answer's length, not the prompt's", "[exercise]") {
  const auto out = exercise::shortest_job_first({make_request(0, 1, 40), make_request(1, 90, 3)});
  CHECK(ids(out) == std::vector<int>{1, 0});
}

TEST_CASE("equal lengths keep their order", "[exercise]") {
  std::vector<infer::Request> rs;
  for (int i = 0; i < 40; ++i) rs.push_back(make_request(i, 1, i % 2 == 0 ? 7 : 3));
  const auto out = exercise::shortest_job_first(rs);
  std::vector<int> want;
  for (int i = 1; i < 40; i += 2) want.push_back(i);
  for (int i = 0; i < 40; i += 2) want.push_back(i);
  CHECK(ids(out) == want);
}

TEST_CASE("equal lengths keep their order in a long queue too", "[exercise]") {
  // 600 requests over three lengths: a sort that is not stable reorders equal keys here on any
  // standard library (a short queue may come out in order by luck of the algorithm).
  std::vector<infer::Request> rs;
  for (int i = 0; i < 600; ++i) rs.push_back(make_request(i, 1 + i % 7, 1 + (i * 7919) % 3));
  const auto out = exercise::shortest_job_first(rs);
  REQUIRE(out.size() == rs.size());
  for (std::size_t i = 1; i < out.size(); ++i) {
    INFO("position " << i << ": request " << out[i - 1].id << " then " << out[i].id);
    REQUIRE(out[i - 1].max_new_tokens <= out[i].max_new_tokens);
    if (out[i - 1].max_new_tokens == out[i].max_new_tokens) REQUIRE(out[i - 1].id < out[i].id);
  }
}

TEST_CASE("a later arrival never goes first", "[exercise]") {
  const auto out = exercise::shortest_job_first({make_request(0, 1, 9, 0.5), make_request(1, 1, 50, 0.0), make_request(2, 1, 1, 0.5)});
  CHECK(ids(out) == std::vector<int>{1, 2, 0});
}

TEST_CASE("every request is kept, with its fields", "[exercise]") {
  const auto in = course_workload();
  const auto out = exercise::shortest_job_first(in);
  REQUIRE(out.size() == in.size());
  for (const infer::Request& r : out) CHECK(r.max_new_tokens == in[r.id].max_new_tokens);
}

TEST_CASE("figure: mean and p99 latency, first come first served against SJF", "[exercise][figure]") {
  const infer::StepCostModel cost = exercise::sweep_cost_model();
  const auto fcfs = infer::simulate(infer::Policy::continuous, course_workload(), 8, cost).summary;
  const auto sjf = infer::simulate(infer::Policy::continuous, exercise::shortest_job_first(course_workload()), 8, cost).summary;
  std::cout << "chapter 04's 64 requests all at t = 0, 8 slots, measured step costs:\n"
               "  admission   mean latency   p50 latency   p99 latency   mean TTFT   total\n";
  for (const auto& [name, s] : {std::pair{"FCFS", fcfs}, std::pair{"SJF", sjf}})
    std::cout << fmt::format("  {:<9} {:>12.1f} s  {:>11.1f} s  {:>11.1f} s  {:>9.1f} s  {:>5.1f} s\n", name, s.mean_latency,
                             s.p50_latency, s.p99_latency, s.mean_ttft, s.total_seconds);
  CHECK(sjf.mean_latency < fcfs.mean_latency);
}
