// Grades exercise 06 (asymmetric INT4): the error bound of 16 levels, exact zeros, independent
// groups, and the gain over chapter 06's symmetric absmax INT4 on one-sided weights.
#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "absmax.hpp"  // chapter 06: symmetric INT4
#include "asymmetric_int4.hpp"

namespace {

std::vector<float> gaussian(std::size_t n, unsigned seed, bool one_sided) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> w(n);
  for (float& x : w) x = one_sided ? std::fabs(d(rng)) : d(rng);
  return w;
}

double symmetric_error(const std::vector<float>& w, int64_t group) {
  const infer::quant::AbsmaxScheme int4(4, infer::quant::Granularity::per_group, group);
  const auto n = std::ssize(w);
  return infer::quant::relative_error(w, infer::quant::round_trip(int4, w, n / 128, 128));
}

}  // namespace

TEST_CASE("every weight is within half a step of its group's grid", "[exercise]") {
  const auto w = gaussian(32 * 8, 1, false);
  const auto r = exercise::asymmetric_int4_round_trip(w, 32);
  REQUIRE(r.size() == w.size());
  for (std::size_t start = 0; start < w.size(); start += 32) {
    float lo = 0, hi = 0;
    for (std::size_t i = start; i < start + 32; ++i) lo = std::min(lo, w[i]), hi = std::max(hi, w[i]);
    const float step = (hi - lo) / 15.0f;
    std::set<float> levels;
    for (std::size_t i = start; i < start + 32; ++i) {
      INFO("weight " << i << " = " << w[i] << ", got " << r[i] << ", step " << step);
      REQUIRE(std::fabs(r[i] - w[i]) <= 0.5f * step * 1.001f + 1e-6f);
      levels.insert(r[i]);
    }
    CHECK(levels.size() <= 16);  // 4 bits
  }
}

TEST_CASE("zero stays exactly zero", "[exercise]") {
  const std::vector<float> w{0.0f, 0.37f, 1.9f, 0.0f, -0.41f, 0.0f, 2.2f, 0.8f};
  const auto r = exercise::asymmetric_int4_round_trip(w, 8);
  CHECK(r[0] == 0.0f);
  CHECK(r[3] == 0.0f);
  CHECK(r[5] == 0.0f);
}

TEST_CASE("an all-zero group, and a constant one", "[exercise]") {
  const std::vector<float> w{0, 0, 0, 0, 3, 3, 3, 3};
  const auto r = exercise::asymmetric_int4_round_trip(w, 4);
  for (int i = 0; i < 4; ++i) REQUIRE(r[i] == 0.0f);  // no 0/0
  for (int i = 4; i < 8; ++i) REQUIRE(r[i] == Approx(3.0f));
}

TEST_CASE("groups do not share a range", "[exercise]") {
  std::vector<float> w = gaussian(64, 2, false);
  for (std::size_t i = 0; i < 32; ++i) w[i] *= 1000.0f;  // a huge first group
  const auto r = exercise::asymmetric_int4_round_trip(w, 32);
  const std::vector<float> second(w.begin() + 32, w.end()), second_r(r.begin() + 32, r.end());
  CHECK(infer::quant::relative_error(second, second_r) < 0.15);
}

TEST_CASE("one-sided weights: about half the error of symmetric INT4", "[exercise]") {
  const auto w = gaussian(128 * 64, 3, true);
  const auto r = exercise::asymmetric_int4_round_trip(w, 32);
  CHECK(infer::quant::relative_error(w, r) < 0.6 * symmetric_error(w, 32));
}

TEST_CASE("a size that is not a multiple of the group is refused", "[exercise]") {
  const std::vector<float> w(10, 1.0f);
  CHECK_THROWS_AS(exercise::asymmetric_int4_round_trip(w, 4), std::invalid_argument);
}

TEST_CASE("figure: relative error, symmetric against asymmetric INT4", "[exercise][figure]") {
  std::cout << "relative error ||W - W_hat|| / ||W|| of 128 x 512 synthetic weights\n"
               "  weights          group   symmetric INT4 (chapter 06)   asymmetric INT4 + zero point\n";
  for (const bool one_sided : {false, true})
    for (const int64_t group : {32, 128}) {
      const auto w = gaussian(128 * 512, 4, one_sided);
      std::cout << fmt::format("  {:<15}  {:>5}   {:>27.4f}   {:>28.4f}\n", one_sided ? "|N(0, 1)|" : "N(0, 1)", group,
                               symmetric_error(w, group), infer::quant::relative_error(w, exercise::asymmetric_int4_round_trip(w, group)));
    }
  // Storage: 4-bit codes plus, per group, an fp16 scale and a 4-bit zero point.
  for (const int64_t group : {32, 128})
    std::cout << fmt::format("  g{}: {:.3f} bits per weight (4 + 20/{})\n", group, 4.0 + 20.0 / static_cast<double>(group), group);
}
