// Grades exercise 01 against attention computed from its definition (common/reference_attention.hpp:
// long double, the softmax's normaliser as a log-sum-exp), a different route to the same numbers.
// The test links nothing of the course's library, so its attention cannot stand in for the answer.
#include <algorithm>
#include <cmath>

#include "catch_compat.hpp"

#include "attention_exercise.hpp"
#include "reference_attention.hpp"
#include "test_helpers.hpp"

namespace {

void check(int T, int D, float scale, unsigned seed) {
  const std::size_t n = static_cast<std::size_t>(T * D);
  const auto q = exercise::random_normal(n, scale, seed), k = exercise::random_normal(n, scale, seed + 1),
             v = exercise::random_normal(n, 1.0f, seed + 2);
  const auto got = exercise::causal_attention_one_head(q, k, v, T, D);
  const auto want = exercise::reference_attention(q, k, v, T, D);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i << " (position " << i / static_cast<std::size_t>(D) << ")");
    REQUIRE(std::isfinite(got[i]));
    REQUIRE(std::fabs(got[i] - want[i]) <= 1e-4f * (1.0f + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("one position attends only to itself: out = v", "[exercise]") { check(1, 8, 1.0f, 1); }
TEST_CASE("random queries, keys and values", "[exercise]") { check(17, 16, 1.0f, 2); }
TEST_CASE("huge scores need the maximum subtracted", "[exercise]") { check(9, 8, 30.0f, 3); }
