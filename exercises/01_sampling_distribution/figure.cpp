// The figure of exercise 01 (sampling): your distribution on the real model's logits. Not graded;
// kept apart from test.cpp because it links the library (the model), and the graded test must not.
//   cmake --build build --target exercise_01_sampling_distribution_figure_student
//   ./build/exercises/exercise_01_sampling_distribution_figure_student
#include <algorithm>
#include <iostream>
#include <string>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "naive_generate.hpp"  // chapter 01: NoCache
#include "sampling/sampler.hpp"  // the library's sampler: temperature first, then top-k and top-p
#include "sampling_exercise.hpp"
#include "test_support.hpp"

TEST_CASE("figure: how many tokens the real model leaves to chance", "[exercise][model]") {
  REQUIRE_MODEL(m);
  for (const std::string prompt : {"The capital of France is", "My favourite animal is the"}) {
    const auto ids = m->tokenizer.encode(prompt);
    infer::NoCache no_cache(m->model.config());  // chapter 01: one pass over the whole prompt, nothing remembered
    const std::vector<float> logits = m->model.forward(ids, 0, no_cache).to_vector();  // [V]
    std::cout << "after \"" << prompt << "\" (" << logits.size() << " tokens in the vocabulary):\n"
              << "     T  top-k  top-p  min-p   candidates   most likely          temperature first: candidates\n";
    const auto candidates = [](const std::vector<float>& dist) { return std::count_if(dist.begin(), dist.end(), [](float x) { return x > 0.0f; }); };
    const exercise::SamplingKnobs settings[] = {{1.0f, 0, 1.0f, 0.0f},  {0.8f, 40, 0.95f, 0.05f}, {1.5f, 40, 0.95f, 0.05f},
                                                {0.5f, 0, 0.9f, 0.0f},  {1.5f, 0, 0.9f, 0.0f},    {1.5f, 0, 1.0f, 0.1f}};
    for (const exercise::SamplingKnobs& k : settings) {
      const auto dist = exercise::sampling_distribution(logits, k);
      const auto top = static_cast<int32_t>(std::max_element(dist.begin(), dist.end()) - dist.begin());
      // The library has no min-p: compared where min-p is off.
      const std::string lib = k.min_p > 0 ? "" : fmt::format("{:>10}", candidates(infer::Sampler({k.temperature, k.top_k, k.top_p}).distribution(logits)));
      std::cout << fmt::format("  {:>4.1f}  {:>5}  {:>5.2f}  {:>5.2f}   {:>10}   {:>10} p = {:.3f}   {}\n", k.temperature, k.top_k, k.top_p, k.min_p,
                               candidates(dist), "\"" + m->tokenizer.decode({top}) + "\"", dist[top], lib);
      CHECK(candidates(dist) >= 1);
    }
  }
}
