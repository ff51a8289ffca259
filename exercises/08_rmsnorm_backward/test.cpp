// Grades exercise 08 (RMSNorm backward): every partial derivative against a central finite
// difference of the given forward, in double precision, as chapter 08's gradient checks do.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "rmsnorm_backward.hpp"

namespace {

constexpr double kEps = 1e-5;

struct Case {
  int N, d;
  std::vector<double> x, w, d_out;
};

Case make_case(int N, int d, unsigned seed, double x_scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Case c{N, d, std::vector<double>(static_cast<std::size_t>(N * d)), std::vector<double>(static_cast<std::size_t>(d)),
         std::vector<double>(static_cast<std::size_t>(N * d))};
  for (double& v : c.x) v = x_scale * u(rng);
  for (double& v : c.w) v = 1.0 + 0.5 * u(rng);
  for (double& v : c.d_out) v = u(rng);
  return c;
}

// L = Σ d_out ⊙ y: its gradient with respect to y is d_out.
double loss(const Case& c, const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> y(x.size());
  exercise::rmsnorm_forward(x.data(), w.data(), c.N, c.d, kEps, y.data());
  double l = 0;
  for (std::size_t i = 0; i < y.size(); ++i) l += c.d_out[i] * y[i];
  return l;
}

// Central difference of the loss in one number p of x or w: (L(p + h) − L(p − h)) / 2h.
double numeric(const Case& c, std::vector<double> x, std::vector<double> w, bool in_x, std::size_t i) {
  constexpr double h = 1e-5;
  double& p = in_x ? x[i] : w[i];
  const double v = p;
  p = v + h;
  const double up = loss(c, x, w);
  p = v - h;
  const double down = loss(c, x, w);
  return (up - down) / (2 * h);
}

// max |analytic − numeric| / max |numeric| over every x and w (each set on its own scale).
double worst_error(const Case& c, const std::vector<double>& dx, const std::vector<double>& dw) {
  double worst = 0;
  for (bool in_x : {true, false}) {
    const std::vector<double>& analytic = in_x ? dx : dw;
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < analytic.size(); ++i) {
      const double n = numeric(c, c.x, c.w, in_x, i);
      diff = std::max(diff, std::abs(analytic[i] - n));
      scale = std::max(scale, std::abs(n));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

double solved_error(const Case& c) {
  std::vector<double> dx(c.x.size(), 0.0), dw(c.w.size(), 0.0);
  exercise::rmsnorm_backward(c.d_out.data(), c.x.data(), c.w.data(), c.N, c.d, kEps, dx.data(), dw.data());
  return worst_error(c, dx, dw);
}

}  // namespace

TEST_CASE("RMSNorm backward matches central finite differences", "[exercise]") {
  for (const auto& [N, d, seed] : {std::tuple{1, 4, 1u}, {3, 16, 2u}, {5, 64, 3u}}) {
    INFO(fmt::format("N = {}, d = {}", N, d));
    CHECK(solved_error(make_case(N, d, seed)) <= 1e-6);
  }
}

TEST_CASE("RMSNorm backward holds for small and large rows (the r³ term matters at every scale)", "[exercise]") {
  CHECK(solved_error(make_case(2, 8, 7, 1e-2)) <= 1e-6);
  CHECK(solved_error(make_case(2, 8, 8, 1e2)) <= 1e-6);
}

TEST_CASE("RMSNorm backward adds into dx and dw instead of overwriting them", "[exercise]") {
  const Case c = make_case(2, 8, 11);
  std::vector<double> dx(c.x.size(), 0.0), dw(c.w.size(), 0.0);
  exercise::rmsnorm_backward(c.d_out.data(), c.x.data(), c.w.data(), c.N, c.d, kEps, dx.data(), dw.data());
  std::vector<double> dx2(c.x.size(), 1.0), dw2(c.w.size(), 1.0);
  exercise::rmsnorm_backward(c.d_out.data(), c.x.data(), c.w.data(), c.N, c.d, kEps, dx2.data(), dw2.data());
  for (std::size_t i = 0; i < dx.size(); ++i) CHECK(dx2[i] == Approx(dx[i] + 1.0).epsilon(1e-12));
  for (std::size_t i = 0; i < dw.size(); ++i) CHECK(dw2[i] == Approx(dw[i] + 1.0).epsilon(1e-12));
}

TEST_CASE("figure: your gradient against the one that forgets how x moves rms(x)", "[exercise][figure]") {
  std::cout << "rows x width   worst relative error: yours   without the −x·r³·mean(g⊙x) term\n";
  for (const auto& [N, d] : {std::pair{1, 4}, {4, 64}, {8, 576}}) {
    const Case c = make_case(N, d, 5);
    std::vector<double> dx(c.x.size(), 0.0), dw(c.w.size(), 0.0);
    // The tempting shortcut: treat r as a constant, dx = r · d_out ⊙ w.
    for (int n = 0; n < N; ++n) {
      double sum_sq = 0;
      for (int i = 0; i < d; ++i) sum_sq += c.x[n * d + i] * c.x[n * d + i];
      const double r = 1.0 / std::sqrt(sum_sq / d + kEps);
      for (int i = 0; i < d; ++i) {
        const auto k = static_cast<std::size_t>(n * d + i);
        dx[k] = r * c.d_out[k] * c.w[i];
        dw[i] += c.d_out[k] * c.x[k] * r;
      }
    }
    std::cout << fmt::format("{:>4} x {:<5}   {:>26.2e}   {:>32.2e}\n", N, d, solved_error(c), worst_error(c, dx, dw));
  }
}
