// Grades exercise 08 (LayerNorm backward): every partial derivative against a central finite
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

#include "layernorm_backward.hpp"

namespace {

constexpr double kEps = 1e-5;

struct Case {
  int N, d;
  std::vector<double> x, w, b, d_out;
  double h_x;  // the finite difference's step in x: smaller for rows of small numbers
};

// x = offset + scale · u(−1, 1): an offset moves the mean far from 0, a scale sets the variance.
Case make_case(int N, int d, unsigned seed, double x_scale = 1.0, double x_offset = 0.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto nd = static_cast<std::size_t>(N * d), dd = static_cast<std::size_t>(d);
  Case c{N, d, std::vector<double>(nd), std::vector<double>(dd), std::vector<double>(dd), std::vector<double>(nd),
         1e-5 * std::min(1.0, x_scale)};
  for (double& v : c.x) v = x_offset + x_scale * u(rng);
  for (double& v : c.w) v = 1.0 + 0.5 * u(rng);
  for (double& v : c.b) v = 0.5 * u(rng);
  for (double& v : c.d_out) v = u(rng);
  return c;
}

// L = Σ d_out ⊙ y: its gradient with respect to y is d_out.
double loss(const Case& c, const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b) {
  std::vector<double> y(x.size());
  exercise::layernorm_forward(x.data(), w.data(), b.data(), c.N, c.d, kEps, y.data());
  double l = 0;
  for (std::size_t i = 0; i < y.size(); ++i) l += c.d_out[i] * y[i];
  return l;
}

// Central difference of the loss in one number p of x, w or b (which = 0, 1, 2):
// (L(p + h) − L(p − h)) / 2h.
double numeric(const Case& c, int which, std::size_t i) {
  const double h = which == 0 ? c.h_x : 1e-5;
  std::vector<double> x = c.x, w = c.w, b = c.b;
  double& p = which == 0 ? x[i] : which == 1 ? w[i] : b[i];
  const double v = p;
  p = v + h;
  const double up = loss(c, x, w, b);
  p = v - h;
  const double down = loss(c, x, w, b);
  return (up - down) / (2 * h);
}

struct Grads {
  std::vector<double> dx, dw, db;
};

// max |analytic − numeric| / max |numeric| over every x, w and b (each set on its own scale).
double worst_error(const Case& c, const Grads& g) {
  double worst = 0;
  for (int which : {0, 1, 2}) {
    const std::vector<double>& analytic = which == 0 ? g.dx : which == 1 ? g.dw : g.db;
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < analytic.size(); ++i) {
      const double n = numeric(c, which, i);
      diff = std::max(diff, std::abs(analytic[i] - n));
      scale = std::max(scale, std::abs(n));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

Grads solve(const Case& c, double start = 0.0) {
  Grads g{std::vector<double>(c.x.size(), start), std::vector<double>(c.w.size(), start),
          std::vector<double>(c.b.size(), start)};
  exercise::layernorm_backward(c.d_out.data(), c.x.data(), c.w.data(), c.N, c.d, kEps, g.dx.data(), g.dw.data(),
                               g.db.data());
  return g;
}

double solved_error(const Case& c) { return worst_error(c, solve(c)); }

}  // namespace

TEST_CASE("LayerNorm backward matches central finite differences", "[exercise]") {
  for (const auto& [N, d, seed] : {std::tuple{1, 4, 1u}, {3, 16, 2u}, {5, 64, 3u}}) {
    INFO(fmt::format("N = {}, d = {}", N, d));
    CHECK(solved_error(make_case(N, d, seed)) <= 1e-6);
  }
}

TEST_CASE("LayerNorm backward holds for small, large and shifted rows, and a row's dx sums to 0", "[exercise]") {
  CHECK(solved_error(make_case(2, 8, 7, 1e-2)) <= 1e-6);
  CHECK(solved_error(make_case(2, 8, 8, 1e2)) <= 1e-6);
  CHECK(solved_error(make_case(2, 8, 9, 1.0, 50.0)) <= 1e-6);
  // Adding one number to a whole row moves the mean by the same and leaves y unchanged: the
  // gradient has no component along (1, 1, …, 1).
  const Case c = make_case(3, 16, 10);
  const Grads g = solve(c);
  for (int n = 0; n < c.N; ++n) {
    double sum = 0, scale = 0;
    for (int i = 0; i < c.d; ++i) {
      sum += g.dx[static_cast<std::size_t>(n * c.d + i)];
      scale = std::max(scale, std::abs(g.dx[static_cast<std::size_t>(n * c.d + i)]));
    }
    INFO(fmt::format("row {}", n));
    CHECK(std::abs(sum) <= 1e-12 * c.d * scale);
  }
}

TEST_CASE("LayerNorm backward adds into dx, dw and db instead of overwriting them", "[exercise]") {
  const Case c = make_case(2, 8, 11);
  const Grads from_zero = solve(c), from_one = solve(c, 1.0);
  for (std::size_t i = 0; i < c.x.size(); ++i) CHECK(from_one.dx[i] == Approx(from_zero.dx[i] + 1.0).epsilon(1e-12));
  for (std::size_t i = 0; i < c.w.size(); ++i) CHECK(from_one.dw[i] == Approx(from_zero.dw[i] + 1.0).epsilon(1e-12));
  for (std::size_t i = 0; i < c.b.size(); ++i) CHECK(from_one.db[i] == Approx(from_zero.db[i] + 1.0).epsilon(1e-12));
}

TEST_CASE("figure: your gradient against ones that forget how x moves the mean or the variance", "[exercise][figure]") {
  std::cout << "rows x width   worst relative error: yours   without −mean(g)   without −x̂·mean(g⊙x̂)\n";
  for (const auto& [N, d] : {std::pair{1, 4}, {4, 64}, {8, 576}}) {
    const Case c = make_case(N, d, 5);
    // The two tempting shortcuts, written out here: the mean held constant, the variance held constant.
    const Grads zero{std::vector<double>(c.x.size(), 0.0), std::vector<double>(c.w.size(), 0.0),
                     std::vector<double>(c.b.size(), 0.0)};
    Grads no_mean = zero, no_var = zero;
    for (int n = 0; n < N; ++n) {
      const double* xr = c.x.data() + n * d;
      double mean = 0, var = 0;
      for (int i = 0; i < d; ++i) mean += xr[i] / d;
      for (int i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean) / d;
      const double s = 1.0 / std::sqrt(var + kEps);
      double mean_g = 0, mean_g_xhat = 0;
      for (int i = 0; i < d; ++i) {
        const auto k = static_cast<std::size_t>(n * d + i);
        mean_g += c.d_out[k] * c.w[i] / d;
        mean_g_xhat += c.d_out[k] * c.w[i] * (xr[i] - mean) * s / d;
      }
      for (int i = 0; i < d; ++i) {
        const auto k = static_cast<std::size_t>(n * d + i);
        const double g = c.d_out[k] * c.w[i], x_hat = (xr[i] - mean) * s;
        no_mean.dx[k] = s * (g - x_hat * mean_g_xhat);
        no_var.dx[k] = s * (g - mean_g);
        for (Grads* shortcut : {&no_mean, &no_var}) {
          shortcut->dw[i] += c.d_out[k] * x_hat;
          shortcut->db[i] += c.d_out[k];
        }
      }
    }
    std::cout << fmt::format("{:>4} x {:<5}   {:>26.2e}   {:>16.2e}   {:>22.2e}\n", N, d, solved_error(c),
                             worst_error(c, no_mean), worst_error(c, no_var));
  }
}
