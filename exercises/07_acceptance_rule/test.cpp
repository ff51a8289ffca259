// Grades exercise 07 (the acceptance rule): the residual by hand, the greedy special case against
// its rule (keep the guesses up to the first that differs from the target's token), and — the
// point of the rule — that the tokens a round produces are distributed exactly as the target's p,
// by chi-square tests over many seeded rounds. Links nothing of the course's library.
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

using exercise::Distribution;

// Chi-square critical values at significance 1e-5, by degrees of freedom: a correct rule fails a
// check once in 100 000 seeds, while each usual mistake scores in the thousands (README).
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

// A round of three guesses over a vocabulary of five, the draft's q unlike the target's p at every
// position, and a bonus row p[3] unlike p[2] (so a bonus drawn from the wrong row shows).
struct Setup {
  std::vector<Distribution> p, q;
  int gamma() const { return static_cast<int>(q.size()); }
};

const Setup kThreeGuesses{
    {{0.40, 0.25, 0.15, 0.15, 0.05},
     {0.05, 0.50, 0.20, 0.05, 0.20},
     {0.30, 0.10, 0.30, 0.20, 0.10},
     {0.10, 0.20, 0.05, 0.25, 0.40}},
    {{0.10, 0.45, 0.30, 0.05, 0.10},
     {0.20, 0.30, 0.20, 0.25, 0.05},
     {0.25, 0.25, 0.25, 0.05, 0.20}}};

// β = Σ min(p, q): the chance that a guess drawn from q is accepted.
double overlap(const Distribution& p, const Distribution& q) {
  double b = 0;
  for (std::size_t v = 0; v < p.size(); ++v) b += std::min(p[v], q[v]);
  return b;
}

// P(accepted = k): the first k guesses kept, then a rejection (or all γ kept).
Distribution accepted_count_law(const Setup& s) {
  Distribution law(static_cast<std::size_t>(s.gamma() + 1));
  double reach = 1;
  for (int k = 0; k < s.gamma(); ++k) {
    const double beta = overlap(s.p[k], s.q[k]);
    law[k] = reach * (1 - beta);
    reach *= beta;
  }
  law.back() = reach;
  return law;
}

// What many rounds produced: the token at each position of the output (position i exists when
// the first i guesses were kept), and how many guesses each round kept.
struct Tally {
  std::vector<std::vector<int64_t>> at_position;  // [position][token]
  std::vector<int64_t> accepted;                  // [k]
  int64_t malformed = 0;                          // rounds with an impossible result
};

// `round(guesses, uniforms)` plays one round; the guesses are drawn from q here, as a draft would.
template <class Round>
Tally play(const Setup& s, int rounds, uint64_t seed, Round round) {
  const std::size_t V = s.p[0].size();
  Tally t{std::vector<std::vector<int64_t>>(static_cast<std::size_t>(s.gamma() + 1), std::vector<int64_t>(V, 0)),
          std::vector<int64_t>(static_cast<std::size_t>(s.gamma() + 1), 0)};
  exercise::Uniforms u(seed);
  std::vector<int> guesses(static_cast<std::size_t>(s.gamma()));
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < guesses.size(); ++i) guesses[i] = exercise::draw(s.q[i], u());
    const exercise::RoundResult out = round(guesses, u);
    if (out.accepted < 0 || out.accepted > s.gamma() || out.bonus != (out.accepted == s.gamma()) || out.next < 0 ||
        out.next >= static_cast<int>(V)) {
      ++t.malformed;
      continue;
    }
    for (int i = 0; i < out.accepted; ++i)
      ++t.at_position[i][guesses[static_cast<std::size_t>(i)]];
    ++t.at_position[out.accepted][out.next];
    ++t.accepted[out.accepted];
  }
  return t;
}

Tally play_yours(const Setup& s, int rounds, uint64_t seed) {
  return play(s, rounds, seed, [&](const std::vector<int>& guesses, exercise::Uniforms& u) {
    return exercise::accept_round(s.p, guesses, s.q, [&u] { return u(); });
  });
}

Distribution one_hot(int token, int V = 5) {
  Distribution d(static_cast<std::size_t>(V), 0.0);
  d[token] = 1.0;
  return d;
}

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

TEST_CASE("greedy: one-hot p and q keep the guesses up to the first mismatch", "[exercise]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> token(0, 4);
  std::bernoulli_distribution right(0.7);
  for (int trial = 0; trial < 200; ++trial) {
    const int gamma = 1 + trial % 4;
    std::vector<int> target(static_cast<std::size_t>(gamma + 1)), guesses(static_cast<std::size_t>(gamma));
    for (int& t : target) t = token(rng);
    for (std::size_t i = 0; i < guesses.size(); ++i)
      guesses[i] = right(rng) ? target[i] : (target[i] + 1 + token(rng) % 4) % 5;  // a different token
    std::vector<Distribution> p, q;
    for (int t : target) p.push_back(one_hot(t));
    for (int g : guesses) q.push_back(one_hot(g));

    // Greedy speculative decoding, counted by hand: the guesses stand up to the first one that is
    // not the target's token; then the target's token at that position (a bonus if none differed).
    exercise::RoundResult want;
    while (want.accepted < gamma && guesses[want.accepted] == target[want.accepted]) ++want.accepted;
    want.next = target[want.accepted];
    want.bonus = want.accepted == gamma;

    // The uniforms must not matter: not the smallest one (0 < p/q = 0 is false) nor the largest.
    for (double fixed : {0.0, std::nextafter(1.0, 0.0)}) {
      INFO("trial " << trial << ", γ = " << gamma << ", every uniform = " << fmt::format("{}", fixed));
      const auto got = exercise::accept_round(p, guesses, q, [fixed] { return fixed; });
      CHECK(got.accepted == want.accepted);
      CHECK(got.next == want.next);
      CHECK(got.bonus == want.bonus);
    }
  }
}

TEST_CASE("a guess the target rules out is always rejected, and the correction comes from the residual", "[exercise]") {
  // γ = 1, p and q differ at every token. Rejected rounds must draw only tokens 0 and 3, in the
  // ratio 0.20 : 0.15 of p − q — not p's ratios, which would also give tokens 2 and 4.
  const Setup s{{{0.35, 0.05, 0.30, 0.20, 0.10}, {0.2, 0.2, 0.2, 0.2, 0.2}}, {{0.15, 0.25, 0.40, 0.05, 0.15}}};
  exercise::Uniforms u(11);
  std::vector<int64_t> corrections(5, 0);
  int64_t rejected = 0, not_a_token = 0;
  const int rounds = 100000;
  for (int r = 0; r < rounds; ++r) {
    const int guess = exercise::draw(s.q[0], u());
    const auto out = exercise::accept_round(s.p, {guess}, s.q, [&u] { return u(); });
    if (out.accepted == 1) continue;
    ++rejected;
    if (out.next < 0 || out.next >= 5) {
      ++not_a_token;
      continue;
    }
    ++corrections[out.next];
  }
  REQUIRE(not_a_token == 0);
  const Distribution residual{0.20 / 0.35, 0, 0, 0.15 / 0.35, 0};
  const double stat = chi_square(corrections, residual);
  INFO("corrections per token " << fmt::format("{}", fmt::join(corrections, " ")) << ", chi-square " << stat);
  CHECK(stat < chi2_critical(1));
  // A rejection happens with probability 1 − Σ min(p, q) = Σ max(0, p − q) = 0.35.
  CHECK(static_cast<double>(rejected) / rounds == Approx(0.35).margin(0.01));

  // p(x) = 0 at the guess: rejected whatever the uniform, even the smallest.
  const std::vector<Distribution> p{{0.0, 0.5, 0.5, 0.0, 0.0}, one_hot(0)};
  const std::vector<Distribution> q{{0.9, 0.1, 0.0, 0.0, 0.0}};
  const auto out = exercise::accept_round(p, {0}, q, [] { return 0.0; });
  CHECK(out.accepted == 0);
  CHECK(out.next == 1);  // the residual (0, 0.4, 0.5, 0, 0)/0.9 at u = 0
}

TEST_CASE("sampled: every output position is distributed exactly as the target's p (chi-square)", "[exercise]") {
  const Setup& s = kThreeGuesses;
  const Tally t = play_yours(s, 200000, 2024);
  INFO("a round must keep 0 … γ guesses, set bonus exactly when it kept all γ, and return a token of the vocabulary");
  REQUIRE(t.malformed == 0);
  for (std::size_t i = 0; i < t.at_position.size(); ++i) {
    const double stat = chi_square(t.at_position[i], s.p[i]);
    INFO("position " << i + 1 << (static_cast<int>(i) == s.gamma() ? " (the bonus token)" : "") << ": counts "
                     << fmt::format("{}", fmt::join(t.at_position[i], " ")) << ", chi-square " << stat);
    CHECK(stat < chi2_critical(degrees_of_freedom(s.p[i])));
  }
}

TEST_CASE("sampled: guesses are kept with probability Σ min(p, q) at each position", "[exercise]") {
  const Setup& s = kThreeGuesses;
  const Tally t = play_yours(s, 200000, 99);
  REQUIRE(t.malformed == 0);
  const Distribution law = accepted_count_law(s);
  const double stat = chi_square(t.accepted, law);
  INFO("rounds keeping 0, 1, 2, 3 guesses: " << fmt::format("{}", fmt::join(t.accepted, " ")) << ", chi-square " << stat);
  CHECK(stat < chi2_critical(s.gamma()));
}

TEST_CASE("figure: chi-square of the output against p", "[exercise][figure]") {
  const Setup& s = kThreeGuesses;
  const int rounds = 200000;
  const Tally yours = play_yours(s, rounds, 2024);
  std::cout << fmt::format("{} rounds of γ = {} guesses, vocabulary 5; chi-square against p (critical value at 1e-5)\n", rounds, s.gamma());
  std::cout << "  position        tokens there   chi-square   critical\n";
  for (std::size_t i = 0; i < yours.at_position.size(); ++i) {
    int64_t n = 0;
    for (int64_t c : yours.at_position[i]) n += c;
    std::cout << fmt::format("  {:<15} {:>12}   {:>10.2f}   {:>8.2f}\n", fmt::format("{}{}", i + 1, static_cast<int>(i) == s.gamma() ? " (bonus)" : ""), n,
                             chi_square(yours.at_position[i], s.p[i]), chi2_critical(degrees_of_freedom(s.p[i])));
  }
  const Distribution law = accepted_count_law(s);
  std::cout << "  guesses kept    predicted      yours\n";
  for (std::size_t k = 0; k < law.size(); ++k)
    std::cout << fmt::format("  {:<15} {:>12.4f}   {:>6.4f}\n", k, law[k], static_cast<double>(yours.accepted[k]) / rounds);
}
