// Grades exercise 01 (sampling) against the distribution computed here from its definition, one
// token at a time: a token's rank is how many tokens are ahead of it, top-k keeps rank < k, top-p
// keeps a token while the temperature-1 probability ranked ahead of it has not reached p, min-p
// compares its temperature-1 probability with the top one's, and only then the temperature. O(V²),
// in long double, and no sort: a different route from the answer's. The test links nothing of the
// course's library (whose sampler, besides, applies the temperature first and has no min-p).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "catch_compat.hpp"

#include "sampling_exercise.hpp"
#include "test_helpers.hpp"

using exercise::SamplingKnobs;

namespace {

std::vector<float> reference(std::span<const float> logits, const SamplingKnobs& k) {
  const std::size_t n = logits.size();
  // ahead(a, b): a is more likely than b (a larger logit, or the same logit and a lower id).
  const auto ahead = [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<std::size_t> rank(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) rank[i] += ahead(j, i);
  std::vector<float> out(n, 0.0f);
  if (k.temperature == 0.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = rank[i] == 0 ? 1.0f : 0.0f;
    return out;
  }
  const long double top = *std::max_element(logits.begin(), logits.end());
  const auto in_top_k = [&](std::size_t i) { return k.top_k == 0 || rank[i] < static_cast<std::size_t>(k.top_k); };
  // Temperature 1 over the top-k candidates: what top-p and min-p look at.
  long double z1 = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (in_top_k(i)) z1 += std::exp(logits[i] - top);
  std::vector<long double> kept(n, 0.0L);
  for (std::size_t i = 0; i < n; ++i) {
    if (!in_top_k(i)) continue;
    long double before = 0;  // the temperature-1 probability of the candidates ranked ahead of i
    for (std::size_t j = 0; j < n; ++j)
      if (in_top_k(j) && rank[j] < rank[i]) before += std::exp(logits[j] - top) / z1;
    if (k.top_p < 1.0f && before >= k.top_p) continue;
    if (std::exp(logits[i] - top) < k.min_p) continue;  // p_i / p_top, at temperature 1
    kept[i] = std::exp((logits[i] - top) / k.temperature);
  }
  const long double kz = std::accumulate(kept.begin(), kept.end(), 0.0L);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(kept[i] / kz);
  return out;
}

void check_against_reference(std::span<const float> logits, const SamplingKnobs& k) {
  INFO("temperature " << k.temperature << ", top_k " << k.top_k << ", top_p " << k.top_p << ", min_p " << k.min_p);
  const auto got = exercise::sampling_distribution(logits, k);
  const auto want = reference(logits, k);
  REQUIRE(got.size() == want.size());
  REQUIRE(std::accumulate(got.begin(), got.end(), 0.0) == Approx(1.0).epsilon(1e-5));
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("token " << i);
    REQUIRE(std::isfinite(got[i]));
    REQUIRE((got[i] == 0.0f) == (want[i] == 0.0f));  // the same tokens kept
    REQUIRE(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-7));
  }
}

// Logits whose temperature-1 softmax is `probs`.
std::vector<float> logits_of(std::initializer_list<double> probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

}  // namespace

TEST_CASE("temperature 0 puts everything on the argmax, ties to the lowest id", "[exercise]") {
  const std::vector<float> logits{0.5f, 3.0f, -1.0f, 3.0f};
  CHECK(exercise::sampling_distribution(logits, {0.0f, 0, 1.0f, 0.0f}) == std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f});
  CHECK(exercise::sampling_distribution(logits, {0.0f, 2, 0.5f, 0.5f}) == std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f});
}

TEST_CASE("no cuts at temperature 1 is the plain softmax", "[exercise]") {
  const std::vector<float> logits{1.0f, 2.0f, 3.0f};
  const auto p = exercise::sampling_distribution(logits, {});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  REQUIRE(p.size() == 3);
  CHECK(p[0] == Approx(std::exp(1.0) / z));
  CHECK(p[1] == Approx(std::exp(2.0) / z));
  CHECK(p[2] == Approx(std::exp(3.0) / z));
}

TEST_CASE("the cuts are made at temperature 1; the temperature only reshapes what is left", "[exercise]") {
  // Probabilities 0.2, 0.5, 0.3 at temperature 1: top-p 0.75 keeps 0.5 and 0.3 (0.5 < 0.75 ≤ 0.8).
  const auto logits = logits_of({0.2, 0.5, 0.3});
  for (float t : {0.3f, 1.0f, 3.0f}) {
    INFO("temperature " << t);
    // Temperature first would keep one token at T = 0.3 (0.5^(1/T) is 81% of the mass) and all
    // three at T = 3 (the top two make 71.5%). Cut first, two at every temperature.
    const double a = std::pow(0.5, 1.0 / t), b = std::pow(0.3, 1.0 / t);
    const auto p = exercise::sampling_distribution(logits, {t, 0, 0.75f, 0.0f});
    REQUIRE(p.size() == 3);
    CHECK(p[0] == 0.0f);
    CHECK(p[1] == Approx(a / (a + b)));
    CHECK(p[2] == Approx(b / (a + b)));
  }
}

TEST_CASE("min-p keeps the tokens within a factor min_p of the most likely one", "[exercise]") {
  // 0.5, 0.3, 0.15, 0.05 with min_p = 0.2: the bar is 0.2 × 0.5 = 0.1, so 0.15 stays and 0.05 goes
  // (a bar of 0.2 itself would drop 0.15 too).
  const auto logits = logits_of({0.05, 0.3, 0.5, 0.15});
  const auto p = exercise::sampling_distribution(logits, {1.0f, 0, 1.0f, 0.2f});
  REQUIRE(p.size() == 4);
  CHECK(p[0] == 0.0f);
  CHECK(p[1] == Approx(0.3 / 0.95));
  CHECK(p[2] == Approx(0.5 / 0.95));
  CHECK(p[3] == Approx(0.15 / 0.95));
  // At temperature 0.5 the ratio 0.15 / 0.5 would square to 0.09, under the bar; min-p looks at
  // temperature 1, so the same three stay, reshaped: 0.25, 0.09, 0.0225.
  const auto q = exercise::sampling_distribution(logits, {0.5f, 0, 1.0f, 0.2f});
  REQUIRE(q.size() == 4);
  CHECK(q[0] == 0.0f);
  CHECK(q[1] == Approx(0.09 / 0.3625));
  CHECK(q[2] == Approx(0.25 / 0.3625));
  CHECK(q[3] == Approx(0.0225 / 0.3625));
}

TEST_CASE("min-p 1 keeps exactly the tokens tied for the top; min-p 0 keeps everything", "[exercise]") {
  const std::vector<float> logits{2.0f, 5.0f, 5.0f, 1.0f};
  CHECK(exercise::sampling_distribution(logits, {0.8f, 0, 1.0f, 1.0f}) == std::vector<float>{0.0f, 0.5f, 0.5f, 0.0f});
  const auto all = exercise::sampling_distribution(logits, {1.0f, 0, 1.0f, 0.0f});
  CHECK(std::count_if(all.begin(), all.end(), [](float x) { return x > 0.0f; }) == 4);
}

TEST_CASE("top-p keeps the token at which the running sum reaches p exactly", "[exercise]") {
  // Four equal logits: probabilities of exactly 0.25, so the running sum reaches 0.5 exactly at
  // the second token (ids 0 and 1: equal logits go lowest id first). ">" instead of ">=" keeps three.
  const std::vector<float> logits{2.0f, 2.0f, 2.0f, 2.0f};
  CHECK(exercise::sampling_distribution(logits, {1.0f, 0, 0.5f, 0.0f}) == std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f});
  // Eight equal logits cut to four by top-k: 0.25 each again, and 0.75 is reached at the third.
  const std::vector<float> eight(8, -1.0f);
  const float third = 1.0f / 3;
  CHECK(exercise::sampling_distribution(eight, {0.7f, 4, 0.75f, 0.0f}) == std::vector<float>{third, third, third, 0, 0, 0, 0, 0});
  // A p below the top token's probability still keeps that one token.
  CHECK(exercise::sampling_distribution(logits_of({0.2, 0.5, 0.3}), {1.0f, 0, 0.1f, 0.0f}) == std::vector<float>{0.0f, 1.0f, 0.0f});
}

TEST_CASE("huge logits need the maximum subtracted before exp", "[exercise]") {
  const std::vector<float> logits{1000.0f, 999.0f, 990.0f, -1000.0f};
  check_against_reference(logits, {0.5f, 0, 1.0f, 0.0f});
  check_against_reference(logits, {0.5f, 0, 0.9f, 0.01f});
}

TEST_CASE("top-k keeps exactly the k largest logits", "[exercise]") {
  const auto logits = exercise::random_normal(40, 1.5f, 2);
  for (int k : {1, 5, 39, 40, 1000}) check_against_reference(logits, {1.0f, k, 1.0f, 0.0f});
}

TEST_CASE("top-k, top-p, min-p and temperature together, against the definition", "[exercise]") {
  const auto logits = exercise::random_normal(200, 3.0f, 3);
  for (float t : {0.5f, 1.0f, 2.0f})
    for (int k : {0, 10, 50})
      for (float p : {1.0f, 0.95f, 0.6f, 0.2f})
        for (float m : {0.0f, 0.05f, 0.3f}) check_against_reference(logits, {t, k, p, m});
}

TEST_CASE("impossible knobs are refused", "[exercise]") {
  const std::vector<float> logits{1.0f, 2.0f};
  CHECK_THROWS_AS(exercise::sampling_distribution({}, {}), std::invalid_argument);
  CHECK_THROWS_AS(exercise::sampling_distribution(logits, {-0.5f, 0, 1.0f, 0.0f}), std::invalid_argument);
  CHECK_THROWS_AS(exercise::sampling_distribution(logits, {1.0f, -1, 1.0f, 0.0f}), std::invalid_argument);
  CHECK_THROWS_AS(exercise::sampling_distribution(logits, {1.0f, 0, 0.0f, 0.0f}), std::invalid_argument);
  CHECK_THROWS_AS(exercise::sampling_distribution(logits, {1.0f, 0, 1.5f, 0.0f}), std::invalid_argument);
  CHECK_THROWS_AS(exercise::sampling_distribution(logits, {1.0f, 0, 1.0f, 1.5f}), std::invalid_argument);
  CHECK_THROWS_AS(exercise::sampling_distribution(logits, {1.0f, 0, 1.0f, -0.1f}), std::invalid_argument);
}
