// Grades exercise 08 (reverse KL): the value on hand-computed distributions, the gradient against
// central finite differences at several temperatures, zero at the teacher, and (figure) what the
// direction of the divergence does to a student too simple to copy the teacher.
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "reverse_kl.hpp"

namespace {

std::vector<double> logs(const std::vector<double>& p) {
  std::vector<double> out;
  for (double x : p) out.push_back(std::log(x));
  return out;
}

double reverse(const std::vector<double>& s, const std::vector<double>& z, double T) {
  std::vector<double> g(s.size());
  return exercise::reverse_kl(s, z, T, g);
}

}  // namespace

TEST_CASE("reverse KL of hand-computed distributions", "[exercise]") {
  // p = (0.49, 0.49, 0.02), q = (0.97, 0.015, 0.015): KL(q‖p) = 0.60579, KL(p‖q) = 1.37945.
  const std::vector<double> z = logs({0.49, 0.49, 0.02}), s = logs({0.97, 0.015, 0.015});
  CHECK(reverse(s, z, 1.0) == Approx(0.6057934010).epsilon(1e-9));
  std::vector<double> g(3);
  CHECK(exercise::forward_kl(s, z, 1.0, g) == Approx(1.3794512512).epsilon(1e-9));
  // At T = 2 the loss is 4 · KL of the flattened distributions, not 4 · the KL above.
  const std::vector<double> q2 = exercise::log_softmax(s, 2.0), p2 = exercise::log_softmax(z, 2.0);
  double kl2 = 0;
  for (std::size_t i = 0; i < 3; ++i) kl2 += std::exp(q2[i]) * (q2[i] - p2[i]);
  CHECK(reverse(s, z, 2.0) == Approx(4 * kl2).epsilon(1e-9));
}

TEST_CASE("reverse KL is zero, with zero gradient, when the student is the teacher", "[exercise]") {
  const std::vector<double> z = {1.5, -0.5, 0.25, 3.0, -2.0};
  std::vector<double> shifted = z, g(z.size(), 7.0);
  for (double& x : shifted) x += 10.0;  // a constant shift of the logits is the same distribution
  CHECK(std::abs(exercise::reverse_kl(shifted, z, 2.0, g)) < 1e-12);
  for (double x : g) CHECK(std::abs(x) < 1e-12);
}

TEST_CASE("reverse KL gradient matches central finite differences", "[exercise]") {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  for (double T : {1.0, 2.0, 4.0}) {
    std::vector<double> s(12), z(12), g(12);
    for (double& x : s) x = u(rng);
    for (double& x : z) x = u(rng);
    exercise::reverse_kl(s, z, T, g);
    for (std::size_t j = 0; j < s.size(); ++j) {
      const double h = 1e-6, v = s[j];
      s[j] = v + h;
      const double up = reverse(s, z, T);
      s[j] = v - h;
      const double down = reverse(s, z, T);
      s[j] = v;
      const double numeric = (up - down) / (2 * h);
      INFO(fmt::format("T = {}, logit {}: analytic {:.9f}, numeric {:.9f}", T, j, g[j], numeric));
      CHECK(std::abs(g[j] - numeric) <= 1e-6 * std::max(std::abs(numeric), 1e-3));
    }
  }
}

TEST_CASE("figure: a one-bump student fitted to a two-bump teacher, by each divergence", "[exercise][figure]") {
  // Teacher over 32 tokens: two equal bumps at 8 and 24 (width 2). Student: one bump,
  // s_i = −β (i − μ)², two parameters, so it cannot copy the teacher. Gradient descent on μ and
  // log β, through each loss's gradient with respect to the logits (the chain rule).
  constexpr int V = 32;
  std::vector<double> z(V);
  for (int i = 0; i < V; ++i) z[i] = std::log(std::exp(-(i - 8.0) * (i - 8.0) / 8.0) + std::exp(-(i - 24.0) * (i - 24.0) / 8.0));
  std::cout << "direction      μ       width 1/√(2β)   student mass on tokens < 16   KL(p‖q)   KL(q‖p)\n";
  for (bool use_reverse : {false, true}) {
    double mu = 13.0, log_beta = std::log(0.03);  // a bump of width 4, left of the middle
    std::vector<double> s(V), g(V);
    for (int step = 0; step < 20000; ++step) {
      const double beta = std::exp(log_beta);
      for (int i = 0; i < V; ++i) s[i] = -beta * (i - mu) * (i - mu);
      if (use_reverse) exercise::reverse_kl(s, z, 1.0, g);
      else exercise::forward_kl(s, z, 1.0, g);
      double d_mu = 0, d_log_beta = 0;
      for (int i = 0; i < V; ++i) d_mu += g[i] * 2 * beta * (i - mu), d_log_beta += g[i] * -beta * (i - mu) * (i - mu);
      mu -= 2.0 * d_mu;
      log_beta -= 0.05 * d_log_beta;
    }
    const double beta = std::exp(log_beta);
    for (int i = 0; i < V; ++i) s[i] = -beta * (i - mu) * (i - mu);
    const std::vector<double> log_q = exercise::log_softmax(s, 1.0);
    double left = 0;
    for (int i = 0; i < V / 2; ++i) left += std::exp(log_q[i]);
    std::vector<double> unused(V);
    std::cout << fmt::format("{:<12} {:6.2f}   {:13.2f}   {:27.3f}   {:7.3f}   {:7.3f}\n", use_reverse ? "reverse" : "forward", mu,
                             1 / std::sqrt(2 * beta), left, exercise::forward_kl(s, z, 1.0, unused), reverse(s, z, 1.0));
  }
}
