// Grades exercise 01 (tiled attention) against attention computed inside the test from its
// definition, in long double with a log-sum-exp normaliser, for many tile sizes, for scores that
// keep raising the running maximum and for huge scores. Links nothing of the course's library.
#include <algorithm>
#include <cmath>

#include "catch_compat.hpp"

#include "reference_attention.hpp"
#include "test_helpers.hpp"
#include "tiled_attention.hpp"

namespace {

void check(int T, int D, float scale, unsigned seed, int tile) {
  INFO("T = " << T << ", D = " << D << ", tile " << tile << ", scores scaled by " << scale);
  const std::size_t n = static_cast<std::size_t>(T * D);
  const auto q = exercise::random_normal(n, scale, seed), k = exercise::random_normal(n, scale, seed + 1),
             v = exercise::random_normal(n, 1.0f, seed + 2);
  const auto got = exercise::tiled_attention(q, k, v, T, D, tile);
  const auto want = exercise::reference_attention(q, k, v, T, D);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i << " (position " << i / static_cast<std::size_t>(D) << ")");
    REQUIRE(std::isfinite(got[i]));
    REQUIRE(std::fabs(got[i] - want[i]) <= 2e-5f * (1.0f + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("one tile per row is plain attention", "[exercise]") { check(13, 8, 1.0f, 1, 64); }

TEST_CASE("every tile size gives the same attention", "[exercise]") {
  for (int tile : {1, 2, 3, 5, 8, 16, 33}) check(33, 16, 1.0f, 2, tile);
}

TEST_CASE("a later tile with a larger maximum rescales what was summed", "[exercise]") {
  // Scores that grow with the key's position: nearly every tile raises the running maximum.
  const int T = 24, D = 4;
  std::vector<float> q(T * D, 1.0f), k(T * D), v = exercise::random_normal(T * D, 1.0f, 3);
  for (int j = 0; j < T; ++j)
    for (int i = 0; i < D; ++i) k[j * D + i] = 0.5f * static_cast<float>(j);
  const auto got = exercise::tiled_attention(q, k, v, T, D, 4);
  const auto want = exercise::reference_attention(q, k, v, T, D);
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(std::fabs(got[i] - want[i]) <= 2e-5f * (1.0f + std::fabs(want[i])));
  // And scores that fall: the first tile holds the maximum for good.
  for (int j = 0; j < T; ++j)
    for (int i = 0; i < D; ++i) k[j * D + i] = -0.5f * static_cast<float>(j);
  const auto got2 = exercise::tiled_attention(q, k, v, T, D, 4);
  const auto want2 = exercise::reference_attention(q, k, v, T, D);
  for (std::size_t i = 0; i < got2.size(); ++i) REQUIRE(std::fabs(got2[i] - want2[i]) <= 2e-5f * (1.0f + std::fabs(want2[i])));
}

TEST_CASE("huge scores: the running maximum keeps exp finite", "[exercise]") {
  for (int tile : {1, 4, 9}) check(20, 8, 30.0f, 4, tile);
}

TEST_CASE("a tile size below 1 is refused", "[exercise]") {
  const std::vector<float> x(8, 1.0f);
  CHECK_THROWS_AS(exercise::tiled_attention(x, x, x, 2, 4, 0), std::invalid_argument);
}
