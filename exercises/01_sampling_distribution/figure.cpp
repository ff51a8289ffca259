// The figure of exercise 01 (sampling): your distribution on the real model's logits. Not graded;
// kept apart from test.cpp because it links the library (the model), and the graded test must not.
//   cmake --build build --target exercise_01_sampling_distribution_figure_student
//   ./build/exercises/exercise_01_sampling_distribution_figure_student
#include <algorithm>
#include <iostream>
#include <tuple>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "naive_generate.hpp"  // chapter 01: NoCache
#include "sampling_exercise.hpp"
#include "test_support.hpp"

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
