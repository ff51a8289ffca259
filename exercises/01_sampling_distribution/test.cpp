// Grades exercise 01 (sampling) against the library's Sampler::distribution (sampling/sampler.hpp),
// the distribution every chapter's generation loop draws from.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <iostream>
#include <numeric>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "naive_generate.hpp"  // chapter 01: NoCache
#include "sampling/sampler.hpp"
#include "sampling_exercise.hpp"
#include "test_helpers.hpp"
#include "test_support.hpp"

namespace {

std::vector<float> library(std::span<const float> logits, float temperature, int top_k, float top_p) {
  return infer::Sampler({.temperature = temperature, .top_k = top_k, .top_p = top_p}).distribution(logits);
}

void check_against_library(std::span<const float> logits, float temperature, int top_k, float top_p) {
  INFO("temperature " << temperature << ", top_k " << top_k << ", top_p " << top_p);
  const auto got = exercise::sampling_distribution(logits, temperature, top_k, top_p);
  const auto want = library(logits, temperature, top_k, top_p);
  REQUIRE(got.size() == want.size());
  REQUIRE(std::accumulate(got.begin(), got.end(), 0.0) == Approx(1.0).epsilon(1e-5));
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("token " << i);
    REQUIRE(std::isfinite(got[i]));
    REQUIRE((got[i] == 0.0f) == (want[i] == 0.0f));  // the same tokens kept
    REQUIRE(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-7));
  }
}

}  // namespace

TEST_CASE("temperature 0 puts everything on the argmax, ties to the lowest id", "[exercise]") {
  const std::vector<float> logits{0.5f, 3.0f, -1.0f, 3.0f};
  const auto p = exercise::sampling_distribution(logits, 0.0f, 0, 1.0f);
  REQUIRE(p == std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f});
}

TEST_CASE("temperature 1 is the plain softmax", "[exercise]") {
  const std::vector<float> logits{1.0f, 2.0f, 3.0f};
  const auto p = exercise::sampling_distribution(logits, 1.0f, 0, 1.0f);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  REQUIRE(p.size() == 3);
  CHECK(p[0] == Approx(std::exp(1.0) / z));
  CHECK(p[1] == Approx(std::exp(2.0) / z));
  CHECK(p[2] == Approx(std::exp(3.0) / z));
}

TEST_CASE("temperature divides the logits (low T sharpens, high T flattens)", "[exercise]") {
  const auto logits = exercise::random_normal(50, 2.0f, 1);
  for (float t : {0.3f, 0.7f, 1.5f, 4.0f}) check_against_library(logits, t, 0, 1.0f);
}

TEST_CASE("huge logits need the maximum subtracted before exp", "[exercise]") {
  const std::vector<float> logits{1000.0f, 999.0f, 990.0f, -1000.0f};
  check_against_library(logits, 0.5f, 0, 1.0f);
}

TEST_CASE("top-k keeps exactly the k largest logits", "[exercise]") {
  const auto logits = exercise::random_normal(40, 1.5f, 2);
  for (int k : {1, 5, 39, 40, 1000}) check_against_library(logits, 1.0f, k, 1.0f);
}

TEST_CASE("top-p keeps the token at which the running sum reaches p", "[exercise]") {
  // Probabilities 0.5, 0.3, 0.2 (in a shuffled order of ids).
  const std::vector<float> logits{std::log(0.2f), std::log(0.5f), std::log(0.3f)};
  const auto p = exercise::sampling_distribution(logits, 1.0f, 0, 0.75f);
  // 0.5 < 0.75, 0.5 + 0.3 ≥ 0.75: the 0.3 token is kept too, then both are renormalised.
  CHECK(p[0] == 0.0f);
  CHECK(p[1] == Approx(0.5 / 0.8));
  CHECK(p[2] == Approx(0.3 / 0.8));
  // A p below the top token's probability still keeps that one token.
  const auto q = exercise::sampling_distribution(logits, 1.0f, 0, 0.1f);
  CHECK(q == std::vector<float>{0.0f, 1.0f, 0.0f});
}

TEST_CASE("top-k, top-p and temperature together, as the library does them", "[exercise]") {
  const auto logits = exercise::random_normal(200, 3.0f, 3);
  for (float t : {0.5f, 1.0f, 2.0f})
    for (int k : {0, 10, 50})
      for (float p : {1.0f, 0.95f, 0.6f, 0.2f}) check_against_library(logits, t, k, p);
}

TEST_CASE("figure: how many tokens the real model leaves to chance", "[exercise][model]") {
  REQUIRE_MODEL(m);
  const std::string prompt = "The capital of France is";
  const auto ids = m->tokenizer.encode(prompt);
  infer::NoCache no_cache(m->model.config());  // chapter 01: one pass over the whole prompt, nothing remembered
  const std::vector<float> logits = m->model.forward(ids, 0, no_cache).to_vector();  // [V]
  std::cout << "after \"" << prompt << "\" (" << logits.size() << " tokens in the vocabulary):\n";
  for (const auto& [t, k, p] : {std::tuple{1.0f, 0, 1.0f}, std::tuple{0.8f, 40, 0.95f}, std::tuple{0.7f, 0, 0.9f}, std::tuple{0.3f, 0, 0.9f}}) {
    const auto dist = exercise::sampling_distribution(logits, t, k, p);
    const auto kept = std::count_if(dist.begin(), dist.end(), [](float x) { return x > 0.0f; });
    const auto top = static_cast<int32_t>(std::max_element(dist.begin(), dist.end()) - dist.begin());
    std::cout << fmt::format("  T {:.1f}  top-k {:>2}  top-p {:.2f}   {:>5} candidates   most likely {:>10} p = {:.3f}\n", t, k, p, kept,
                             "\"" + m->tokenizer.decode({top}) + "\"", dist[top]);
    CHECK(kept >= 1);
  }
}
