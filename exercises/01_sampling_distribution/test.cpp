// Grades exercise 01 (sampling) against the distribution computed here from its definition, one
// token at a time: a token's rank is how many tokens are ahead of it, top-k keeps rank < k, top-p
// keeps a token while the probability ranked ahead of it has not reached p. O(V²), in long double,
// and no sort: a different route from the answer's. The test links nothing of the course's
// library, so the library's sampler cannot stand in for the answer.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "catch_compat.hpp"

#include "sampling_exercise.hpp"
#include "test_helpers.hpp"

namespace {

std::vector<float> reference(std::span<const float> logits, float temperature, int top_k, float top_p) {
  const std::size_t n = logits.size();
  // ahead(a, b): a is more likely than b (a larger logit, or the same logit and a lower id).
  const auto ahead = [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<std::size_t> rank(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) rank[i] += ahead(j, i);
  std::vector<float> out(n, 0.0f);
  if (temperature == 0.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = rank[i] == 0 ? 1.0f : 0.0f;
    return out;
  }
  const float top = *std::max_element(logits.begin(), logits.end());
  std::vector<long double> w(n, 0.0L);
  for (std::size_t i = 0; i < n; ++i)
    if (top_k == 0 || rank[i] < static_cast<std::size_t>(top_k)) w[i] = std::exp((static_cast<long double>(logits[i]) - top) / temperature);
  const long double z = std::accumulate(w.begin(), w.end(), 0.0L);
  std::vector<long double> kept(n, 0.0L);
  for (std::size_t i = 0; i < n; ++i) {
    long double before = 0;  // the probability of the tokens ranked ahead of i
    for (std::size_t j = 0; j < n; ++j)
      if (rank[j] < rank[i]) before += w[j] / z;
    if (top_p >= 1.0f || before < top_p) kept[i] = w[i];
  }
  const long double kz = std::accumulate(kept.begin(), kept.end(), 0.0L);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(kept[i] / kz);
  return out;
}

void check_against_reference(std::span<const float> logits, float temperature, int top_k, float top_p) {
  INFO("temperature " << temperature << ", top_k " << top_k << ", top_p " << top_p);
  const auto got = exercise::sampling_distribution(logits, temperature, top_k, top_p);
  const auto want = reference(logits, temperature, top_k, top_p);
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
  for (float t : {0.3f, 0.7f, 1.5f, 4.0f}) check_against_reference(logits, t, 0, 1.0f);
}

TEST_CASE("huge logits need the maximum subtracted before exp", "[exercise]") {
  const std::vector<float> logits{1000.0f, 999.0f, 990.0f, -1000.0f};
  check_against_reference(logits, 0.5f, 0, 1.0f);
}

TEST_CASE("top-k keeps exactly the k largest logits", "[exercise]") {
  const auto logits = exercise::random_normal(40, 1.5f, 2);
  for (int k : {1, 5, 39, 40, 1000}) check_against_reference(logits, 1.0f, k, 1.0f);
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

TEST_CASE("top-p keeps the token at which the running sum reaches p exactly", "[exercise]") {
  // Four equal logits: probabilities of exactly 0.25, so the running sum reaches 0.5 exactly at
  // the second token (ids 0 and 1: equal logits go lowest id first). ">" instead of ">=" keeps three.
  const std::vector<float> logits{2.0f, 2.0f, 2.0f, 2.0f};
  CHECK(exercise::sampling_distribution(logits, 1.0f, 0, 0.5f) == std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f});
  // Eight equal logits cut to four by top-k: 0.25 each again, and 0.75 is reached at the third.
  const std::vector<float> eight(8, -1.0f);
  const float third = 1.0f / 3;
  CHECK(exercise::sampling_distribution(eight, 0.7f, 4, 0.75f) == std::vector<float>{third, third, third, 0, 0, 0, 0, 0});
}

TEST_CASE("top-k, top-p and temperature together, against the definition", "[exercise]") {
  const auto logits = exercise::random_normal(200, 3.0f, 3);
  for (float t : {0.5f, 1.0f, 2.0f})
    for (int k : {0, 10, 50})
      for (float p : {1.0f, 0.95f, 0.6f, 0.2f}) check_against_reference(logits, t, k, p);
}

