// Grades exercise 06 (asymmetric INT4 with a clipping search): every group's ŵ must be one of the
// eleven candidates (the given quantize_group on [c·lo, c·hi]) and the one with the smallest
// squared error, found here by brute force in long double; hand-made groups show when clipping
// must and must not happen. Links nothing of the course's library.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "asymmetric_int4.hpp"

namespace {

// Weights: N(0, 1), or Laplace (heavy tails: the outliers clipping is for), seeded.
std::vector<float> weights(std::size_t n, unsigned seed, bool heavy_tailed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::exponential_distribution<float> exponential(1.0f);
  std::vector<float> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = heavy_tailed ? (i % 2 ? 1.0f : -1.0f) * exponential(rng) : normal(rng);
  return w;
}

long double squared_error(std::span<const float> w, std::span<const float> w_hat) {
  long double e = 0;
  for (std::size_t i = 0; i < w.size(); ++i) e += (static_cast<long double>(w[i]) - w_hat[i]) * (static_cast<long double>(w[i]) - w_hat[i]);
  return e;
}

// The eleven candidates of one group, largest range first.
std::vector<std::vector<float>> candidates(std::span<const float> g) {
  const float lo = std::min(0.0f, *std::min_element(g.begin(), g.end()));
  const float hi = std::max(0.0f, *std::max_element(g.begin(), g.end()));
  std::vector<std::vector<float>> out;
  for (int k = 0; k < exercise::kClipSteps; ++k) {
    std::vector<float> c(g.size());
    exercise::quantize_group(g, exercise::clip_factor(k) * lo, exercise::clip_factor(k) * hi, c);
    out.push_back(c);
  }
  return out;
}

// Every group of `got` is a candidate of its group, with the smallest error of them all.
void check_groups(const std::vector<float>& w, const std::vector<float>& got, std::size_t group) {
  REQUIRE(got.size() == w.size());
  for (std::size_t start = 0; start < w.size(); start += group) {
    const std::span<const float> g(w.data() + start, group), mine(got.data() + start, group);
    const auto all = candidates(g);
    long double best = INFINITY;
    for (const auto& c : all) best = std::min(best, squared_error(g, c));
    const bool is_candidate = std::any_of(all.begin(), all.end(), [&](const std::vector<float>& c) { return std::equal(c.begin(), c.end(), mine.begin()); });
    INFO("group at " << start << ": squared error " << static_cast<double>(squared_error(g, mine)) << ", the best candidate's "
                     << static_cast<double>(best));
    REQUIRE(is_candidate);  // quantize_group on [c·lo, c·hi] for one of the factors
    REQUIRE(squared_error(g, mine) <= best * (1 + 1e-9L));
  }
}

double relative_error(const std::vector<float>& w, const std::vector<float>& w_hat) {
  return std::sqrt(static_cast<double>(squared_error(w, w_hat) / squared_error(w, std::vector<float>(w.size(), 0.0f))));
}

// Chapter 06's scheme, the full range of every group (c = 1).
std::vector<float> unclipped(const std::vector<float>& w, std::size_t group) {
  std::vector<float> out;
  for (std::size_t start = 0; start < w.size(); start += group) {
    const auto full = candidates(std::span<const float>(w.data() + start, group))[0];
    out.insert(out.end(), full.begin(), full.end());
  }
  return out;
}

}  // namespace

TEST_CASE("a group that fits the grid keeps its full range", "[exercise]") {
  // 0, 0.1, … 1.5: exactly the 16 levels of the full range, so clipping can only hurt.
  std::vector<float> w(16);
  for (int i = 0; i < 16; ++i) w[i] = 0.1f * static_cast<float>(i);
  const auto r = exercise::clipped_int4_round_trip(w, 16);
  REQUIRE(r.size() == 16);
  for (int i = 0; i < 16; ++i) CHECK(r[i] == Approx(w[i]).margin(1e-6));
}

TEST_CASE("heavy-tailed weights: the search lowers the error", "[exercise]") {
  const auto w = weights(64 * 128, 3, true);
  const auto r = exercise::clipped_int4_round_trip(w, 128);
  CHECK(relative_error(w, r) < 0.97 * relative_error(w, unclipped(w, 128)));  // about 5% lower
}

TEST_CASE("every group picks the best of its candidates (Gaussian and heavy-tailed weights)", "[exercise]") {
  for (const bool heavy : {false, true}) {
    INFO((heavy ? "Laplace" : "Gaussian") << " weights");
    const auto w = weights(32 * 64, heavy ? 2 : 1, heavy);
    check_groups(w, exercise::clipped_int4_round_trip(w, 32), 32);
  }
}

TEST_CASE("each group searches on its own", "[exercise]") {
  // The first group fits the grid (no clipping), the second has an outlier (clipping): one factor
  // for the whole tensor would be wrong for one of them.
  std::vector<float> w(32);
  for (int i = 0; i < 16; ++i) w[i] = 0.1f * static_cast<float>(i);
  for (int i = 0; i < 15; ++i) w[16 + i] = 0.02f * static_cast<float>(i);
  w[31] = 1.5f;
  check_groups(w, exercise::clipped_int4_round_trip(w, 16), 16);
}

TEST_CASE("a group of positive weights still has 0 in its range", "[exercise]") {
  // lo = min(0, 0.42) = 0: the candidates are ranges [0, c·1.5], not [c·0.42, c·1.5].
  const std::vector<float> w{0.42f, 0.87f, 1.5f, 0.61f, 1.1f, 0.95f, 1.3f, 0.5f};
  check_groups(w, exercise::clipped_int4_round_trip(w, 8), 8);
}

TEST_CASE("zero stays exactly zero, and an all-zero group gives zeros", "[exercise]") {
  const std::vector<float> w{0.0f, 0.37f, 1.9f, 0.0f, -0.41f, 0.0f, 9.2f, 0.8f, 0, 0, 0, 0, 0, 0, 0, 0};
  const auto r = exercise::clipped_int4_round_trip(w, 8);
  for (std::size_t i : {0u, 3u, 5u}) CHECK(r[i] == 0.0f);
  for (std::size_t i = 8; i < 16; ++i) CHECK(r[i] == 0.0f);
}

TEST_CASE("a size that is not a multiple of the group is refused", "[exercise]") {
  const std::vector<float> w(10, 1.0f);
  CHECK_THROWS_AS(exercise::clipped_int4_round_trip(w, 4), std::invalid_argument);
  CHECK_THROWS_AS(exercise::clipped_int4_round_trip(w, 0), std::invalid_argument);
}

TEST_CASE("figure: relative error of asymmetric INT4, full range against the clipping search", "[exercise][figure]") {
  std::cout << "relative error ||W - W_hat|| / ||W|| of 128 x 512 synthetic weights, asymmetric INT4\n"
               "  weights            group   full range (chapter 06)   clipping search\n";
  for (const bool heavy : {false, true})
    for (const std::size_t group : {32u, 128u}) {
      const auto w = weights(128 * 512, 4, heavy);
      std::cout << fmt::format("  {:<17}  {:>5}   {:>23.4f}   {:>15.4f}\n", heavy ? "Laplace (heavy)" : "N(0, 1)", group,
                               relative_error(w, unclipped(w, group)),
                               relative_error(w, exercise::clipped_int4_round_trip(w, static_cast<int64_t>(group))));
    }
}
