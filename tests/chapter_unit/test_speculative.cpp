// Chapter 07's acceptance rule on small explicit distributions: its output must be distributed
// exactly as the target's p, whatever the draft's q. Checked by a chi-square test over 10⁶
// seeded draws (vocabulary of 5), with a deliberately wrong rule as the control that shows the
// test can tell; then the same for two consecutive tokens of toy Markov "models".
#include <cmath>
#include <vector>

#include "catch_compat.hpp"

#include "prompt_lookup.hpp"
#include "speculative_decode.hpp"
#include "speedup.hpp"

using namespace infer;

namespace {

using Dist = std::vector<float>;
const Dist kP = {0.10f, 0.40f, 0.20f, 0.25f, 0.05f};  // the target
const Dist kQ = {0.30f, 0.10f, 0.30f, 0.10f, 0.20f};  // a draft that is often wrong

// Σ (observed − expected)² / expected over the bins.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& expected_p, int64_t n) {
  double chi2 = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double e = expected_p[i] * static_cast<double>(n);
    chi2 += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
  }
  return chi2;
}

double total_variation(const std::vector<int64_t>& counts, const Dist& p, int64_t n) {
  double tv = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) tv += std::fabs(static_cast<double>(counts[i]) / static_cast<double>(n) - p[i]);
  return tv / 2;
}

// The first token of a round with one guess drawn from q, n times.
std::vector<int64_t> first_tokens(int64_t n, uint64_t seed, bool wrong_rule = false) {
  Sampler draft_draws(SamplingParams{.temperature = 1.0f, .seed = seed});
  Sampler rule_draws(SamplingParams{.temperature = 1.0f, .seed = seed + 1000});
  const std::vector<Dist> p = {kP, kP};  // the second row (the bonus) does not affect the first token
  std::vector<int64_t> counts(kP.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t x = draft_draws.draw(kQ);
    int32_t first = 0;
    if (wrong_rule) {  // a tempting mistake: on rejection draw from p itself, not from the residual
      first = rule_draws.uniform() < std::min(1.0, double(kP[x]) / kQ[x])
                  ? x : rule_draws.draw(kP);
    } else {
      const RoundOutcome r = accept_draft(p, Draft{{x}, {kQ}}, rule_draws);
      first = r.accepted == 1 ? x : r.next;
    }
    ++counts[first];
  }
  return counts;
}

std::vector<double> as_double(const Dist& p) { return {p.begin(), p.end()}; }

}  // namespace

TEST_CASE("the acceptance rule's first token is distributed as p (chi-square, 10^6 draws)", "[speculative]") {
  constexpr int64_t n = 1'000'000;
  const double chi2 = chi_square(first_tokens(n, 1), as_double(kP), n);
  INFO("chi-square " << chi2 << " with 4 degrees of freedom");
  CHECK(chi2 < 18.47);  // the 0.1% critical value: a correct rule fails this one time in a thousand seeds

  // The control: drawing from p after a rejection (instead of max(0, p − q)) over-weights the
  // tokens the draft proposes too rarely; the same test must reject it.
  const double wrong = chi_square(first_tokens(n, 1, /*wrong_rule=*/true), as_double(kP), n);
  INFO("wrong rule: chi-square " << wrong);
  CHECK(wrong > 1000);
}

TEST_CASE("the distance to p shrinks like 1/sqrt(N)", "[speculative]") {
  std::vector<double> scaled;
  for (int64_t n : {10'000, 100'000, 1'000'000}) {
    const double tv = total_variation(first_tokens(n, 7 + static_cast<uint64_t>(n)), kP, n);
    scaled.push_back(tv * std::sqrt(static_cast<double>(n)));
    INFO("N = " << n << ": total variation " << tv);
  }
  // For a correct rule TV·√N stays of order one; a biased rule's TV stops shrinking, so TV·√N
  // would grow tenfold from one N to the next.
  for (double s : scaled) CHECK(s < 2.0);
  CHECK(scaled[2] < 3.0 * scaled[0]);
}

TEST_CASE("two consecutive tokens are distributed as the target's p(a)·p(b|a)", "[speculative]") {
  // Toy Markov models over 5 tokens: row a is the distribution of the token after a.
  const std::vector<Dist> P = {{0.5f, 0.2f, 0.1f, 0.1f, 0.1f}, {0.1f, 0.1f, 0.6f, 0.1f, 0.1f}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
                               {0.05f, 0.05f, 0.1f, 0.4f, 0.4f}, {0.3f, 0.3f, 0.1f, 0.2f, 0.1f}};
  const std::vector<Dist> Q = {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0.1f, 0.6f, 0.1f, 0.1f, 0.1f}, {0.4f, 0.1f, 0.1f, 0.1f, 0.3f},
                               {0.25f, 0.25f, 0.25f, 0.15f, 0.1f}, {0.1f, 0.1f, 0.6f, 0.1f, 0.1f}};
  constexpr int64_t n = 1'000'000;
  constexpr int kGamma = 2;
  Sampler draft_draws(SamplingParams{.temperature = 1.0f, .seed = 11});
  Sampler rule_draws(SamplingParams{.temperature = 1.0f, .seed = 12});
  std::vector<int64_t> counts(25, 0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> seq = {0};  // the prompt: token 0
    while (seq.size() < 3) {         // rounds until two tokens are generated
      Draft d;
      for (int g = 0; g < kGamma; ++g) {
        const Dist& q = Q[g == 0 ? seq.back() : d.tokens.back()];
        d.tokens.push_back(draft_draws.draw(q));
        d.q.push_back(q);
      }
      // p after seq, after seq + d1, after seq + d1 d2
      const std::vector<Dist> p = {P[seq.back()], P[d.tokens[0]],
                                   P[d.tokens[1]]};
      const RoundOutcome r = accept_draft(p, d, rule_draws);
      for (int k = 0; k < r.accepted; ++k) seq.push_back(d.tokens[k]);
      seq.push_back(r.next);
    }
    ++counts[seq[1] * 5 + seq[2]];
  }
  std::vector<double> expected(25);
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) expected[a * 5 + b] = double(P[0][a]) * P[a][b];
  const double chi2 = chi_square(counts, expected, n);
  INFO("chi-square " << chi2 << " with 24 degrees of freedom");
  CHECK(chi2 < 51.18);  // the 0.1% critical value
}

TEST_CASE("greedy: a guess stands exactly when it is the target's argmax", "[speculative]") {
  Sampler sampler(SamplingParams{});
  const Dist one_hot_2 = {0, 0, 1, 0, 0}, one_hot_4 = {0, 0, 0, 0, 1};
  // Guesses 2, 4 against targets 2, 1, (bonus) 3: the first stands, the second is replaced by 1.
  RoundOutcome r = accept_draft(std::vector<Dist>{one_hot_2, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}}, Draft{{2, 4}, {}}, sampler);
  CHECK(r.accepted == 1);
  CHECK(r.next == 1);
  CHECK_FALSE(r.bonus);
  // Both guesses right: both stand, and the last row gives a bonus token.
  r = accept_draft(std::vector<Dist>{one_hot_2, one_hot_4, {0, 0, 0, 1, 0}}, Draft{{2, 4}, {}}, sampler);
  CHECK(r.accepted == 2);
  CHECK(r.next == 3);
  CHECK(r.bonus);
  CHECK_THROWS(accept_draft(std::vector<Dist>{one_hot_2}, Draft{{2, 4}, {}}, sampler));
}

TEST_CASE("a residual that rounding left empty draws from p, never NaN or the last token id", "[speculative]") {
  // q's float rounding puts it a hair above p on the guess (token 0, where p is 0) and level with
  // p elsewhere, so every entry of max(0, p − q) is 0: the rejection is certain (p(0) = 0) and the
  // residual has no mass. Dividing by its total would give NaN, which draw() used to turn into
  // the last id (2, where p is 0 too).
  const Dist p = {0.0f, 1.0f, 0.0f};
  const Dist q = {1e-8f, 1.0f, 0.0f};
  Sampler sampler(SamplingParams{.temperature = 1.0f, .seed = 1});
  for (int i = 0; i < 100; ++i) {
    const RoundOutcome r = accept_draft(std::vector<Dist>{p, p}, Draft{{0}, {q}}, sampler);
    REQUIRE(r.accepted == 0);
    REQUIRE(r.next == 1);
  }
}

TEST_CASE("prompt lookup proposes what followed the most recent earlier match", "[speculative]") {
  PromptLookupDrafter lookup(/*max_ngram=*/2, /*min_ngram=*/1);
  // ... 5 6 7 8 ... 5 6 | → guess 7 8 9 (what followed "5 6" the last time)
  const std::vector<int32_t> context = {1, 5, 6, 7, 8, 9, 2, 5, 6};
  Draft d = lookup.propose(context, 3);
  CHECK(d.tokens == std::vector<int32_t>{7, 8, 9});
  CHECK(d.q.empty());  // deterministic: q is one-hot
  CHECK(d.q_of(0) == 1.0f);
  CHECK(lookup.propose(context, 1).tokens == std::vector<int32_t>{7});
  // No earlier occurrence of the last token: no guess, the round is a plain decode step.
  CHECK(lookup.propose(std::vector<int32_t>{1, 2, 3, 4}, 3).tokens.empty());
  // The most recent match wins: "3" was followed by 4 and later by 9.
  CHECK(lookup.propose(std::vector<int32_t>{3, 4, 3, 9, 3}, 1).tokens == std::vector<int32_t>{9});
}

TEST_CASE("the predicted speed-up reduces to the course's formula when every round guesses", "[speculative]") {
  spec::MeasuredCosts costs;
  costs.verify = {1.0, 1.1, 1.2, 1.3, 1.4};
  SpeculativeStats s;
  s.rounds = s.guessing_rounds = 10;
  s.drafted = 40;  // γ = 4 every round
  s.checked_at = {10, 8, 6, 5};
  s.accepted_at = {8, 6, 5, 4};
  s.accepted = 23;
  const double alpha = 23.0 / 29.0;
  CHECK(s.alpha() == Approx(alpha));
  CHECK(spec::predicted_for(s, 0.25, costs) == Approx(spec::expected_tokens(alpha, 4) / (4 * 0.25 + 1.4)));
  // Half the rounds without a guess: they are plain decode steps, 1 token for 1 step.
  s.rounds = 20;
  const double e = spec::expected_tokens(alpha, 4);
  CHECK(spec::predicted_for(s, 0.25, costs) == Approx((0.5 + 0.5 * e) / (0.5 + 0.5 * (4 * 0.25 + 1.4))));
  // The course's own cases.
  CHECK(spec::predicted_speedup(0.9, 8, 0.1) == Approx(3.40).margin(0.005));
  CHECK(spec::predicted_speedup(0.3, 8, 0.1) == Approx(0.79).margin(0.005));
  CHECK(spec::expected_tokens(0.3, 4) == Approx(1.43).margin(0.005));
}
