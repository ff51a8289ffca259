// Grades exercise 06 (SmoothQuant): the factors, the unchanged product, and the 8-bit error of
// X·Wᵀ with chapter 06's absmax INT8 before and after smoothing.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "absmax.hpp"  // chapter 06: INT8 absmax quantization
#include "smoothquant.hpp"

namespace {

struct Layer {
  int64_t tokens, d, rows;
  std::vector<float> x, w;  // [tokens, d], [rows, d]
};

// Activations with a few outlier channels 50× the rest (the pattern chapter 06 measures in the
// model's residual stream), and ordinary weights.
Layer outlier_layer(unsigned seed, int64_t tokens = 64, int64_t d = 128, int64_t rows = 96) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Layer L{tokens, d, rows, std::vector<float>(static_cast<std::size_t>(tokens * d)), std::vector<float>(static_cast<std::size_t>(rows * d))};
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j) L.x[t * d + j] = n(rng) * (j % 37 == 5 ? 50.0f : 1.0f);
  for (float& e : L.w) e = 0.05f * n(rng);
  return L;
}

// Column maxima of |m| for a [r, c] matrix: per input channel.
std::vector<float> column_absmax(const std::vector<float>& m, int64_t r, int64_t c) {
  std::vector<float> out(static_cast<std::size_t>(c), 0.0f);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[j] = std::max(out[j], std::fabs(m[i * c + j]));
  return out;
}

std::vector<double> product(const Layer& L, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<std::size_t>(L.tokens * L.rows), 0.0);
  for (int64_t t = 0; t < L.tokens; ++t)
    for (int64_t o = 0; o < L.rows; ++o)
      for (int64_t j = 0; j < L.d; ++j)
        y[t * L.rows + o] += double{x[t * L.d + j]} * w[o * L.d + j];
  return y;
}

double relative_gap(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / den);
}

// W8A8 the simple way: activations INT8 with one scale for the tensor, weights INT8 per row.
double w8a8_error(const Layer& L, float alpha) {
  std::vector<float> x = L.x, w = L.w;
  if (alpha >= 0) {
    const auto s = exercise::smoothing_factors(column_absmax(x, L.tokens, L.d), column_absmax(w, L.rows, L.d), alpha);
    exercise::apply_smoothing(x, L.tokens, w, L.rows, s);
  }
  using infer::quant::AbsmaxScheme, infer::quant::Granularity;
  const auto xq = infer::quant::round_trip(AbsmaxScheme(8, Granularity::per_tensor), x, L.tokens, L.d);
  const auto wq = infer::quant::round_trip(AbsmaxScheme(8, Granularity::per_row), w, L.rows, L.d);
  return relative_gap(product(L, xq, wq), product(L, L.x, L.w));
}

}  // namespace

TEST_CASE("the factors follow max|X|^α / max|W|^(1−α)", "[exercise]") {
  const std::vector<float> a{16.0f, 1.0f, 4.0f}, w{1.0f, 4.0f, 0.25f};
  const auto s = exercise::smoothing_factors(a, w, 0.5f);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == Approx(4.0f));   // √16 / √1
  CHECK(s[1] == Approx(0.5f));   // √1 / √4
  CHECK(s[2] == Approx(4.0f));   // √4 / √0.25
  const auto s1 = exercise::smoothing_factors(a, w, 1.0f);
  CHECK(s1[0] == Approx(16.0f));  // α = 1: divide by the activation max itself
  const auto s0 = exercise::smoothing_factors(a, w, 0.0f);
  CHECK(s0[1] == Approx(0.25f));  // α = 0: 1 / max|W|
}

TEST_CASE("a silent channel keeps factor 1", "[exercise]") {
  const std::vector<float> a{0.0f, 2.0f}, w{3.0f, 0.0f};
  CHECK(exercise::smoothing_factors(a, w, 0.5f) == std::vector<float>{1.0f, 1.0f});
}

TEST_CASE("smoothing leaves X·Wᵀ unchanged", "[exercise]") {
  const Layer L = outlier_layer(1, 8, 16, 12);
  std::vector<float> x = L.x, w = L.w;
  const auto s = exercise::smoothing_factors(column_absmax(x, L.tokens, L.d), column_absmax(w, L.rows, L.d), 0.5f);
  exercise::apply_smoothing(x, L.tokens, w, L.rows, s);
  CHECK(relative_gap(product(L, x, w), product(L, L.x, L.w)) < 1e-6);
}

TEST_CASE("at α = 0.5 each channel's activation and weight maxima meet", "[exercise]") {
  const Layer L = outlier_layer(2, 8, 16, 12);
  std::vector<float> x = L.x, w = L.w;
  const auto s = exercise::smoothing_factors(column_absmax(x, L.tokens, L.d), column_absmax(w, L.rows, L.d), 0.5f);
  exercise::apply_smoothing(x, L.tokens, w, L.rows, s);
  const auto xa = column_absmax(x, L.tokens, L.d), wa = column_absmax(w, L.rows, L.d);
  for (std::size_t j = 0; j < xa.size(); ++j) CHECK(xa[j] == Approx(wa[j]).epsilon(1e-4));
}

TEST_CASE("smoothing cuts the W8A8 error of a layer with outlier channels", "[exercise]") {
  const Layer L = outlier_layer(3);
  CHECK(w8a8_error(L, 0.5f) < 0.5 * w8a8_error(L, -1.0f));
}

TEST_CASE("figure: W8A8 error of X·Wᵀ against the migration strength α", "[exercise][figure]") {
  const Layer L = outlier_layer(4);
  std::cout << "64 tokens x 128 channels (4 outlier channels at 50x), W 96 x 128; INT8 X per-tensor, INT8 W per-row\n"
               "  smoothing        relative error of X·Wᵀ\n";
  std::cout << fmt::format("  none             {:.4f}\n", w8a8_error(L, -1.0f));
  for (float alpha : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f}) std::cout << fmt::format("  α = {:.2f}         {:.4f}\n", alpha, w8a8_error(L, alpha));
}
