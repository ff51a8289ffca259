// Grades exercise 06 (SmoothQuant's α): the W8A8 error of a layer against the definition written
// out here with plain loops (the same smoothing, the header's INT8 round trip), and the chosen α
// against a brute-force search of the grid. Links nothing of the course's library.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "catch_compat.hpp"
#include <fmt/format.h>

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

// The W8A8 error by its definition: smooth (α ≥ 0), INT8 X per tensor and W per row, compare.
double reference_error(const Layer& L, float alpha) {
  std::vector<float> x = L.x, w = L.w;
  if (alpha >= 0) {
    const auto s = exercise::smoothing_factors(column_absmax(x, L.tokens, L.d), column_absmax(w, L.rows, L.d), alpha);
    for (int64_t t = 0; t < L.tokens; ++t)
      for (int64_t j = 0; j < L.d; ++j) x[t * L.d + j] /= s[j];
    for (int64_t o = 0; o < L.rows; ++o)
      for (int64_t j = 0; j < L.d; ++j) w[o * L.d + j] *= s[j];
  }
  const auto xq = exercise::int8_round_trip(x, 1, L.tokens * L.d);
  const auto wq = exercise::int8_round_trip(w, L.rows, L.d);
  return relative_gap(product(L, xq, wq), product(L, L.x, L.w));
}

double yours(const Layer& L, float alpha) { return exercise::w8a8_error(L.x, L.tokens, L.w, L.rows, alpha); }

// A layer without outlier channels: N(0, 1) activations.
Layer plain_layer(unsigned seed) {
  Layer L = outlier_layer(seed);
  std::mt19937 rng(seed + 100);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (float& e : L.x) e = n(rng);
  return L;
}

const std::vector<float> kGrid{0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f};

}  // namespace

TEST_CASE("without smoothing: the W8A8 error of the layer as it is", "[exercise]") {
  for (unsigned seed : {1u, 2u}) {
    const Layer L = outlier_layer(seed, 8, 16, 12);
    CHECK(yours(L, -1.0f) == Approx(reference_error(L, -1.0f)).epsilon(1e-9));
  }
}

TEST_CASE("the error after smoothing at α = 0, 0.5 and 1", "[exercise]") {
  const Layer L = outlier_layer(3);
  for (float alpha : {0.0f, 0.5f, 1.0f}) {
    INFO("α = " << alpha);
    CHECK(yours(L, alpha) == Approx(reference_error(L, alpha)).epsilon(1e-9));
  }
}

TEST_CASE("smoothing at α = 0.5 at least halves the error of a layer with outlier channels", "[exercise]") {
  const Layer L = outlier_layer(4);
  CHECK(yours(L, 0.5f) < 0.5 * yours(L, -1.0f));
}

TEST_CASE("best_alpha: the grid's smallest error, by brute force", "[exercise]") {
  for (const Layer& L : {outlier_layer(5), outlier_layer(6, 32, 64, 48), plain_layer(7)}) {
    double best = INFINITY;
    float best_alpha = -1;
    for (float a : kGrid)
      if (const double e = reference_error(L, a); e < best) best = e, best_alpha = a;
    const float got = exercise::best_alpha(L.x, L.tokens, L.w, L.rows, kGrid);
    INFO("best_alpha returned " << got << " (error " << reference_error(L, got) << "); the grid's best is " << best_alpha << " (error "
                                << best << ")");
    REQUIRE(std::find(kGrid.begin(), kGrid.end(), got) != kGrid.end());
    CHECK(reference_error(L, got) <= best * (1 + 1e-9));
  }
}

TEST_CASE("best_alpha searches only the α it is given", "[exercise]") {
  const Layer L = outlier_layer(8);
  const std::vector<float> two{0.1f, 0.9f};
  const float want = reference_error(L, 0.1f) <= reference_error(L, 0.9f) ? 0.1f : 0.9f;
  CHECK(exercise::best_alpha(L.x, L.tokens, L.w, L.rows, two) == want);
}

TEST_CASE("figure: W8A8 error of X·Wᵀ against the migration strength α", "[exercise][figure]") {
  const Layer L = outlier_layer(4), P = plain_layer(4);
  std::cout << "64 tokens x 128 channels, W 96 x 128; INT8 X per-tensor, INT8 W per-row; relative error of X·Wᵀ\n"
               "  smoothing        4 outlier channels at 50x   no outliers\n";
  std::cout << fmt::format("  none             {:>25.4f}   {:>11.4f}\n", yours(L, -1.0f), yours(P, -1.0f));
  for (float alpha : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f})
    std::cout << fmt::format("  α = {:.2f}         {:>25.4f}   {:>11.4f}\n", alpha, yours(L, alpha), yours(P, alpha));
  std::cout << fmt::format("  best α of 0, 0.1 … 1: {:.1f} with outliers, {:.1f} without\n", exercise::best_alpha(L.x, L.tokens, L.w, L.rows, kGrid),
                           exercise::best_alpha(P.x, P.tokens, P.w, P.rows, kGrid));
}
