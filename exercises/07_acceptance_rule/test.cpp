// Grades exercise 07 (the acceptance rule with several candidates): the residual by hand, the
// greedy special case against its rule (the target's token, kept if it is among the candidates),
// the law of which candidate is kept in a case worked by hand, and — the point of the rule — that
// the token that comes out is distributed exactly as the target's p, by chi-square tests over
// many seeded positions, with candidates drawn here as a draft would draw them. Links nothing of
// the course's library (whose chapter 07 verifies one guess per position).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>

#include "catch_compat.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "acceptance_rule.hpp"
#include "test_helpers.hpp"  // exercise::Uniforms

namespace {

using exercise::Candidates;
using exercise::Distribution;

// Chi-square critical values at significance 1e-5, by degrees of freedom: a correct rule fails a
// check once in 100 000 seeds, while each usual mistake scores in the hundreds or more (README).
double chi2_critical(int df) {
  static const double table[] = {0, 19.51, 23.03, 25.90, 28.47, 30.86};
  return table[df];
}

// Pearson's statistic of observed counts against a distribution; a count where the distribution
// has no mass at all is an impossible outcome and fails outright.
double chi_square(const std::vector<int64_t>& counts, const Distribution& expected) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double stat = 0;
  for (std::size_t v = 0; v < counts.size(); ++v) {
    const double e = expected[v] * static_cast<double>(n);
    if (e <= 0) {
      if (counts[v] > 0) return INFINITY;
      continue;
    }
    stat += (static_cast<double>(counts[v]) - e) * (static_cast<double>(counts[v]) - e) / e;
  }
  return stat;
}

int degrees_of_freedom(const Distribution& d) {
  return static_cast<int>(std::count_if(d.begin(), d.end(), [](double x) { return x > 0; })) - 1;
}

// k candidates as the draft draws them: independently from q, or one after another from q
// without the ones already drawn.
std::vector<int> draw_candidates(const Distribution& q, int k, Candidates how, exercise::Uniforms& u) {
  std::vector<int> out;
  Distribution left = q;
  for (int j = 0; j < k; ++j) {
    double mass = 0;
    for (double w : left) mass += w;
    Distribution now = left;
    for (double& w : now) w /= mass;
    const int x = exercise::draw(now, u());
    out.push_back(x);
    if (how == Candidates::distinct) left[static_cast<std::size_t>(x)] = 0;
  }
  return out;
}

// What many positions produced: the token that came out, and which candidate was kept
// ([0]: none, [j + 1]: candidate j).
struct Tally {
  std::vector<int64_t> tokens;
  std::vector<int64_t> kept;
  int64_t malformed = 0;  // a verdict that names no candidate, or a token that is not the one named
};

Tally play(const Distribution& p, const Distribution& q, int k, Candidates how, int positions, uint64_t seed) {
  Tally t{std::vector<int64_t>(p.size(), 0), std::vector<int64_t>(static_cast<std::size_t>(k + 1), 0)};
  exercise::Uniforms u(seed);
  for (int n = 0; n < positions; ++n) {
    const std::vector<int> c = draw_candidates(q, k, how, u);
    const exercise::Verdict v = exercise::verify_candidates(p, q, c, how, [&u] { return u(); });
    if (v.accepted < -1 || v.accepted >= k || v.token < 0 || v.token >= static_cast<int>(p.size()) ||
        (v.accepted >= 0 && v.token != c[static_cast<std::size_t>(v.accepted)])) {
      ++t.malformed;
      continue;
    }
    ++t.tokens[static_cast<std::size_t>(v.token)];
    ++t.kept[static_cast<std::size_t>(v.accepted + 1)];
  }
  return t;
}

// A target and a draft that disagree at every token, each with a token the other rules out:
// token 4 can only come from a candidate (and p rules it out), token 5 only after every
// candidate was rejected (q never proposes it).
const Distribution kP{0.30, 0.05, 0.25, 0.20, 0.00, 0.20};
const Distribution kQ{0.10, 0.35, 0.15, 0.20, 0.20, 0.00};

Distribution one_hot(int token, int V = 5) {
  Distribution d(static_cast<std::size_t>(V), 0.0);
  d[static_cast<std::size_t>(token)] = 1.0;
  return d;
}

const char* name(Candidates how) { return how == Candidates::independent ? "independent" : "distinct"; }

}  // namespace

TEST_CASE("the residual is max(0, p − q), normalised", "[exercise]") {
  // p and q differ at every token: the residual keeps only the tokens where p is larger.
  const auto r = exercise::residual({0.35, 0.05, 0.30, 0.20, 0.10}, {0.15, 0.25, 0.40, 0.05, 0.15});
  REQUIRE(r.size() == 5);
  CHECK(r[0] == Approx(0.20 / 0.35));
  CHECK(r[1] == 0.0);
  CHECK(r[2] == 0.0);
  CHECK(r[3] == Approx(0.15 / 0.35));
  CHECK(r[4] == 0.0);
  // One-hot p and q that disagree (greedy decoding): the residual is the target's own token.
  CHECK(exercise::residual(one_hot(3), one_hot(1)) == one_hot(3));
  // p == q: no residual mass; the header says to return p.
  const Distribution same{0.5, 0.25, 0.25, 0.0, 0.0};
  CHECK(exercise::residual(same, same) == same);
}

TEST_CASE("greedy: a one-hot target keeps its own token if it is a candidate, whatever the uniforms", "[exercise]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> token(0, 4);
  const Distribution q{0.3, 0.25, 0.2, 0.15, 0.1};
  for (int trial = 0; trial < 200; ++trial) {
    const int k = 1 + trial % 4, target = token(rng);
    const Candidates how = trial % 2 ? Candidates::independent : Candidates::distinct;
    std::vector<int> c;
    while (std::ssize(c) < k) {
      const int x = token(rng);
      if (how == Candidates::independent || std::find(c.begin(), c.end(), x) == c.end()) c.push_back(x);
    }
    // Counted by hand: the first candidate that is the target's token is kept; if none is, the
    // target's token comes out anyway, after every candidate was rejected.
    const auto at = std::find(c.begin(), c.end(), target);
    const int want = at == c.end() ? -1 : static_cast<int>(at - c.begin());
    // Not the smallest uniform (0 < 0/q is false) nor the largest (target/q ≥ 1 once it is owed).
    for (double fixed : {0.0, std::nextafter(1.0, 0.0)}) {
      INFO("trial " << trial << ", " << name(how) << " candidates " << fmt::format("{}", fmt::join(c, " ")) << ", target's token " << target
                    << ", every uniform = " << fmt::format("{}", fixed));
      const auto got = exercise::verify_candidates(one_hot(target), q, c, how, [fixed] { return fixed; });
      CHECK(got.accepted == want);
      CHECK(got.token == target);
    }
  }
}

TEST_CASE("which candidate is kept, in a case worked by hand", "[exercise]") {
  // p = (0.6, 0.4, 0), q = (0.2, 0.3, 0.5), two candidates. The first is kept with probability
  // Σ min(p, q) = 0.5, and a rejected one is always token 2; what is still owed is then
  // r = (0.4, 0.1, 0) / 0.5 = (0.8, 0.2, 0).
  //   independent: the second comes from q: kept with Σ min(r, q) = 0.2 + 0.2 = 0.4, so
  //                P(first, second, none) = (0.5, 0.5 × 0.4, 0.5 × 0.6) = (0.5, 0.2, 0.3);
  //   distinct:    the second comes from q without token 2, (0.4, 0.6, 0): kept with
  //                0.4 + 0.2 = 0.6, so (0.5, 0.3, 0.2).
  // Either way the token is 0 with probability 0.6 and 1 with 0.4: p.
  const Distribution p{0.6, 0.4, 0.0}, q{0.2, 0.3, 0.5};
  for (const auto& [how, law] : {std::pair{Candidates::independent, Distribution{0.3, 0.5, 0.2}},
                                 std::pair{Candidates::distinct, Distribution{0.2, 0.5, 0.3}}}) {
    const Tally t = play(p, q, 2, how, 100000, 5);
    REQUIRE(t.malformed == 0);
    const double kept = chi_square(t.kept, law), tokens = chi_square(t.tokens, p);
    INFO(name(how) << ": none, first, second kept " << fmt::format("{}", fmt::join(t.kept, " ")) << " (chi-square " << kept
                   << "); tokens " << fmt::format("{}", fmt::join(t.tokens, " ")) << " (chi-square " << tokens << ")");
    CHECK(kept < chi2_critical(2));
    CHECK(tokens < chi2_critical(1));
  }
}

TEST_CASE("sampled: the token is distributed exactly as p, for independent and distinct candidates (chi-square)", "[exercise]") {
  for (Candidates how : {Candidates::independent, Candidates::distinct}) {
    const Tally t = play(kP, kQ, 3, how, 200000, 2024);
    INFO("a verdict must name a candidate (or −1) and return that candidate's token");
    REQUIRE(t.malformed == 0);
    const double stat = chi_square(t.tokens, kP);
    INFO(name(how) << " candidates: tokens " << fmt::format("{}", fmt::join(t.tokens, " ")) << ", chi-square " << stat);
    CHECK(stat < chi2_critical(degrees_of_freedom(kP)));
  }
}

TEST_CASE("figure: more candidates, more acceptance, the same p", "[exercise][figure]") {
  const int positions = 200000;
  std::cout << fmt::format("p = ({}), q = ({}); {} positions per row\n", fmt::join(kP, ", "), fmt::join(kQ, ", "), positions)
            << "                 independent candidates       distinct candidates\n"
               "  candidates     kept    chi-square vs p      kept    chi-square vs p\n";
  for (int k = 1; k <= 4; ++k) {
    std::cout << fmt::format("  {:>10}", k);
    for (Candidates how : {Candidates::independent, Candidates::distinct}) {
      const Tally t = play(kP, kQ, k, how, positions, 2024);
      std::cout << fmt::format("   {:>6.1f}%   {:>15.2f}", 100.0 - 100.0 * static_cast<double>(t.kept[0]) / positions, chi_square(t.tokens, kP));
    }
    std::cout << "\n";
  }
  std::cout << fmt::format("  (critical value at 1e-5: {:.2f})\n", chi2_critical(degrees_of_freedom(kP)));
}
