// Grades exercise 07 (adaptive γ): the choice of γ against brute force with the closed form of
// the predicted speed-up (written out below), its edge cases, the running estimate of α, and a simulated run whose
// acceptance rate changes halfway, where the adaptive choice must keep up with the best fixed γ.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "adaptive_gamma.hpp"
#include "test_helpers.hpp"  // exercise::Uniforms

namespace {

using exercise::kMaxGamma;

// A round of γ guesses when each is kept with probability α, independently: how many are kept
// before the first rejection.
int bernoulli_round(exercise::Uniforms& u, double alpha, int gamma) {
  int kept = 0;
  while (kept < gamma && u() < alpha) ++kept;
  return kept;
}

// S(α, γ) = E / (γc + 1) with E in closed form, (1 − α^(γ+1)) / (1 − α), and γ + 1 at α = 1 (the
// answer sums the series instead: a different route to the same number).
double speedup(double alpha, int gamma, double c) {
  if (gamma == 0) return 1.0;
  const double expected = alpha == 1.0 ? gamma + 1.0 : (1.0 - std::pow(alpha, gamma + 1)) / (1.0 - alpha);
  return expected / (gamma * c + 1.0);
}

// A run of `tokens` tokens whose acceptance rate is alpha_before for the first half and
// alpha_after for the rest. Time is counted in target forward passes: a round of γ guesses costs
// γ·c + 1, a plain step 1. Tokens per unit of time is then the speed-up over plain decoding.
struct Scenario {
  double alpha_before, alpha_after, c;
};

struct RunResult {
  double speedup = 0;
  double mean_gamma[2] = {0, 0};  // the mean γ of the steps in each half
};

// gamma_fixed ≥ 0: that γ every step; −1: exercise::next_gamma with exercise::record_round.
RunResult simulate(const Scenario& s, int gamma_fixed, int tokens = 20000, uint64_t seed = 5) {
  exercise::Uniforms u(seed);
  exercise::AcceptanceEstimate estimate;
  int64_t produced = 0, steps[2] = {0, 0}, gamma_sum[2] = {0, 0};
  double time = 0;
  while (produced < tokens) {
    const int half = produced < tokens / 2 ? 0 : 1;
    const double alpha = half == 0 ? s.alpha_before : s.alpha_after;
    const int gamma = gamma_fixed >= 0 ? gamma_fixed : exercise::next_gamma(estimate, s.c);
    if (gamma < 0 || gamma > kMaxGamma) FAIL("next_gamma returned γ = " << gamma);
    ++steps[half];
    gamma_sum[half] += gamma;
    const int kept = bernoulli_round(u, alpha, gamma);
    produced += kept + 1;  // the kept guesses and the target's own token (a plain step: just that)
    time += gamma * s.c + 1.0;
    if (gamma_fixed < 0) exercise::record_round(estimate, gamma, kept);
  }
  RunResult r;
  r.speedup = static_cast<double>(produced) / time;
  for (int h = 0; h < 2; ++h) r.mean_gamma[h] = steps[h] > 0 ? static_cast<double>(gamma_sum[h]) / static_cast<double>(steps[h]) : 0;
  return r;
}

// Easy text then harder, hard then easy, and a change that makes speculation not worth it.
const std::vector<Scenario> kScenarios = {{0.9, 0.5, 0.1}, {0.3, 0.9, 0.2}, {0.8, 0.2, 0.25}};

}  // namespace

TEST_CASE("best_gamma agrees with brute force over a grid of α and c", "[exercise]") {
  for (int ia = 0; ia <= 50; ++ia)
    for (int ic = 0; ic <= 120; ++ic) {
      const double alpha = ia / 50.0, c = ic / 100.0;
      double best = 1.0;  // γ = 0, plain decoding
      for (int g = 1; g <= kMaxGamma; ++g) best = std::max(best, speedup(alpha, g, c));
      const int got = exercise::best_gamma(alpha, c);
      INFO("α = " << alpha << ", c = " << c << ": best_gamma returned " << got);
      REQUIRE(got >= 0);
      REQUIRE(got <= kMaxGamma);
      // Rounding may split an exact tie either way; anything within 1e-9 of the best is the best.
      CHECK(speedup(alpha, got, c) >= best - 1e-9);
    }
}

TEST_CASE("best_gamma: the edge cases", "[exercise]") {
  // α = 0: every guess is wasted, every γ is slower than (or at c = 0 as fast as) plain decoding.
  for (double c : {0.0, 0.1, 0.5}) CHECK(exercise::best_gamma(0.0, c) == 0);
  // α = 1: every guess is kept, so the most guesses win — as long as a draft step is cheaper than
  // a target step. (Careful: the closed form of E is 0/0 here.)
  for (double c : {0.0, 0.1, 0.5, 0.9}) CHECK(exercise::best_gamma(1.0, c) == kMaxGamma);
  CHECK(exercise::best_gamma(1.0, 1.0) == 0);  // (γ+1)/(γ+1): never better than plain
  CHECK(exercise::best_gamma(1.0, 2.0) == 0);
  // c = 0: guessing is free, so more guesses never hurt.
  for (double alpha : {0.1, 0.5, 0.99}) CHECK(exercise::best_gamma(alpha, 0.0) == kMaxGamma);
  // The course's cases: α = 0.3 and c = 0.2 pays only at γ = 1 (1.08×); α = 0.9, c = 0.1 at γ = 8.
  CHECK(exercise::best_gamma(0.3, 0.2) == 1);
  CHECK(exercise::best_gamma(0.9, 0.1) == 8);
}

TEST_CASE("the estimate counts only the guesses that were checked", "[exercise]") {
  for (const auto& [alpha, gamma] : {std::pair{0.8, 8}, std::pair{0.5, 3}}) {
    exercise::Uniforms u(17);
    exercise::AcceptanceEstimate e;
    double sum = 0;
    for (int round = 0; round < 1000; ++round) {
      exercise::record_round(e, gamma, bernoulli_round(u, alpha, gamma));
      if (round >= 200) sum += e.alpha;  // after the prior has been outweighed
    }
    INFO("true α " << alpha << ", γ = " << gamma << ": mean estimate " << sum / 800);
    CHECK(sum / 800 == Approx(alpha).margin(0.03));
  }
}

TEST_CASE("every guess kept: the estimate goes to 1 and γ to the largest", "[exercise]") {
  exercise::AcceptanceEstimate e;
  for (int round = 0; round < 30; ++round) exercise::record_round(e, 4, 4);
  CHECK(e.alpha > 0.95);  // 4 checked, 4 kept — there was no fifth guess to reject
  CHECK(exercise::next_gamma(e, 0.1) == kMaxGamma);
}

TEST_CASE("old rounds fade: the estimate follows a change of text", "[exercise]") {
  // 2000 rounds that keep everything, then 200 that keep nothing: an estimate that never forgets
  // would still say α ≈ 0.97 and keep speculating at full γ on text where every guess fails.
  exercise::AcceptanceEstimate e;
  for (int round = 0; round < 2000; ++round) exercise::record_round(e, 4, 4);
  for (int round = 0; round < 200; ++round) exercise::record_round(e, 4, 0);
  INFO("estimate after the change: " << e.alpha);
  CHECK(e.alpha < 0.25);
}

TEST_CASE("nothing kept: no speculation, but a γ = 1 probe every 16 steps", "[exercise]") {
  exercise::AcceptanceEstimate e;
  for (int round = 0; round < 30; ++round) exercise::record_round(e, 2, 0);
  CHECK(e.alpha < 0.05);
  const double before = e.alpha;
  exercise::record_round(e, 0, 0);  // a plain step says nothing about α
  CHECK(e.alpha == before);
  int probes = 0, plain = 0;
  for (int step = 0; step < 160; ++step) {
    const int g = exercise::next_gamma(e, 0.1);
    probes += g == 1;
    plain += g == 0;
  }
  CHECK(probes == 160 / exercise::kProbeEvery);
  CHECK(plain == 160 - probes);
}

TEST_CASE("when α changes halfway, adaptive γ keeps up with the best fixed γ", "[exercise]") {
  for (const Scenario& s : kScenarios) {
    double best_fixed = 0;
    for (int g = 0; g <= kMaxGamma; ++g) best_fixed = std::max(best_fixed, simulate(s, g).speedup);
    const RunResult adaptive = simulate(s, -1);
    INFO(fmt::format("α {} → {}, c = {}: adaptive {:.3f}×, best fixed γ {:.3f}×", s.alpha_before, s.alpha_after, s.c,
                     adaptive.speedup, best_fixed));
    CHECK(adaptive.speedup >= 0.97 * best_fixed);
  }
}

TEST_CASE("figure: speed-up of fixed and adaptive γ when α changes halfway", "[exercise][figure]") {
  std::cout << "Simulated runs of 20000 tokens, guesses kept with probability α (seeded); speed-up over plain decoding\n";
  std::cout << fmt::format("  {:<22}", "α first → second half");
  for (int g = 0; g <= kMaxGamma; ++g) std::cout << fmt::format(" {:>5}", fmt::format("γ={}", g));
  std::cout << "  adaptive   ÷ best fixed   mean γ per half\n";
  for (const Scenario& s : kScenarios) {
    std::cout << fmt::format("  {:<22}", fmt::format("{:.1f} → {:.1f}, c = {:.2f}", s.alpha_before, s.alpha_after, s.c));
    double best_fixed = 0;
    for (int g = 0; g <= kMaxGamma; ++g) {
      const double x = simulate(s, g).speedup;
      best_fixed = std::max(best_fixed, x);
      std::cout << fmt::format(" {:>5.2f}", x);
    }
    const RunResult a = simulate(s, -1);
    std::cout << fmt::format("  {:>7.2f}×  {:>12.3f}   {:.1f} → {:.1f}\n", a.speedup, a.speedup / best_fixed, a.mean_gamma[0], a.mean_gamma[1]);
  }
}
