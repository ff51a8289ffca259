// Sampling: greedy, temperature, top-k and top-p, and reproducibility for a seed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"

#include "app/cli.hpp"
#include "sampling/sampler.hpp"

using namespace infer;

TEST_CASE("greedy picks the largest logit", "[sampling]") {
  Sampler s({.temperature = 0.0f});
  const std::vector<float> logits{0.1f, 2.0f, -1.0f, 1.9f};
  REQUIRE(s.sample(logits) == 1);
}

TEST_CASE("the distribution follows temperature, top-k and top-p", "[sampling]") {
  const std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SECTION("temperature 1 keeps the softmax") {
    const auto p = Sampler({.temperature = 1.0f}).distribution(logits);
    REQUIRE(p[0] == Approx(0.5).epsilon(1e-6));
    REQUIRE(p[3] == Approx(0.05).epsilon(1e-5));
  }
  SECTION("top-k 2 keeps the two most likely, renormalised") {
    const auto p = Sampler({.temperature = 1.0f, .top_k = 2}).distribution(logits);
    REQUIRE(p[0] == Approx(0.625));
    REQUIRE(p[1] == Approx(0.375));
    REQUIRE(p[2] == 0.0f);
  }
  SECTION("top-p 0.75 keeps the smallest prefix reaching 0.75: the first two") {
    const auto p = Sampler({.temperature = 1.0f, .top_p = 0.75f}).distribution(logits);
    REQUIRE(p[0] == Approx(0.5 / 0.8));
    REQUIRE(p[2] == 0.0f);
  }
  SECTION("a low temperature sharpens") {
    const auto p = Sampler({.temperature = 0.5f}).distribution(logits);
    REQUIRE(p[0] == Approx(0.25 / (0.25 + 0.09 + 0.0225 + 0.0025)));
  }
}

TEST_CASE("sampling is reproducible for a seed and matches the distribution", "[sampling]") {
  const std::vector<float> logits{0.0f, 1.0f, 2.0f};
  Sampler a({.temperature = 1.0f, .seed = 7}), b({.temperature = 1.0f, .seed = 7});
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const int32_t x = a.sample(logits);
    REQUIRE(x == b.sample(logits));
    ++counts[x];
  }
  const auto p = Sampler({.temperature = 1.0f}).distribution(logits);
  for (int32_t id = 0; id < 3; ++id) {
    // within 5 standard deviations of the binomial
    const double expected = p[id] * n;
    REQUIRE(std::fabs(counts[id] - expected) < 5 * std::sqrt(expected));
  }
}

// The distribution the way it is easiest to read: sort every token by logit, then cut. The
// sampler sorts only the front it needs (top-k, top-p); it must keep the same tokens with the
// same probabilities.
std::vector<float> full_sort_distribution(std::span<const float> logits, const SamplingParams& sp) {
  const std::size_t n = logits.size();
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  std::size_t keep = sp.top_k > 0 ? std::min<std::size_t>(n, static_cast<std::size_t>(sp.top_k)) : n;
  std::vector<double> w(keep);
  double total = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    w[i] = std::exp((logits[order[i]] - static_cast<double>(logits[order[0]])) /
                    sp.temperature);
    total += w[i];
  }
  if (sp.top_p < 1.0f) {
    double cumulative = 0.0;
    std::size_t cut = keep;
    for (std::size_t i = 0; i < keep; ++i) {
      cumulative += w[i] / total;
      if (cumulative >= sp.top_p) { cut = i + 1; break; }
    }
    keep = cut;
    total = std::accumulate(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  }
  std::vector<float> p(n, 0.0f);
  for (std::size_t i = 0; i < keep; ++i) p[order[i]] = static_cast<float>(w[i] / total);
  return p;
}

TEST_CASE("the sampler keeps the tokens and draws of a full sort, on random logits", "[sampling]") {
  const std::vector<SamplingParams> settings{
      {.temperature = 0.8f, .top_k = 40},
      {.temperature = 0.8f, .top_p = 0.95f},
      {.temperature = 0.8f, .top_k = 40, .top_p = 0.9f},
      {.temperature = 1.5f, .top_p = 0.5f},
      {.temperature = 0.8f, .top_k = 3000},
      {.temperature = 1.0f},
  };
  for (uint64_t seed = 0; seed < 100; ++seed) {
    std::mt19937_64 rng(seed);
    // A peaked head and a long tail, like a language model's logits; rounding to 1/8 makes ties.
    std::vector<float> logits(5000);
    std::normal_distribution<float> tail(0.0f, 2.0f);
    for (float& l : logits) l = std::round(tail(rng) * 8.0f) / 8.0f;
    for (int i = 0; i < 5; ++i) logits[rng() % logits.size()] += 12.0f;
    for (SamplingParams sp : settings) {
      sp.seed = seed;
      INFO("seed " << seed << ", T " << sp.temperature << ", top-k " << sp.top_k << ", top-p " << sp.top_p);
      const std::vector<float> want = full_sort_distribution(logits, sp);
      const std::vector<float> got = Sampler(sp).distribution(logits);
      for (std::size_t i = 0; i < logits.size(); ++i) {
        REQUIRE((got[i] == 0.0f) == (want[i] == 0.0f));  // the same tokens kept
        // Exact with top-k; with every token a candidate, the softmax total is summed in id order
        // rather than by rank, which may move the last bit.
        REQUIRE(got[i] == Approx(want[i]).epsilon(sp.top_k > 0 ? 0.0 : 1e-6));
      }
      Sampler ours(sp), reference(sp);
      for (int draw = 0; draw < 20; ++draw) REQUIRE(ours.sample(logits) == reference.draw(want));
    }
  }
}

TEST_CASE("bad parameters are refused", "[sampling]") {
  REQUIRE_THROWS(Sampler({.temperature = -1.0f}));
  REQUIRE_THROWS(Sampler({.temperature = 1.0f, .top_p = 0.0f}));
}

// --- the repetition penalty (llama.cpp's definition), values worked by hand ---

TEST_CASE("repetition penalty: positive logits divided, negative multiplied, each id once", "[sampling][penalty]") {
  std::vector<float> logits{2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
  const std::vector<int32_t> recent{0, 1, 1, 4, 99};  // 1 twice; 99 is outside the vocabulary
  apply_repetition_penalty(logits, recent, 2.0f);
  CHECK(logits[0] == 1.0f);   // 2 / 2
  CHECK(logits[1] == -2.0f);  // −1 · 2, once although seen twice (not −4)
  CHECK(logits[2] == 0.5f);   // not seen
  CHECK(logits[3] == 3.0f);   // not seen
  CHECK(logits[4] == 0.0f);   // 0 · 2
  std::vector<float> same{2.0f, -1.0f};
  apply_repetition_penalty(same, std::vector<int32_t>{0, 1}, 1.0f);
  CHECK(same == std::vector<float>{2.0f, -1.0f});
}

TEST_CASE("repetition penalty: greedy changes its choice only when the penalty is large enough", "[sampling][penalty]") {
  const std::vector<float> logits{3.0f, 2.0f};
  const std::vector<int32_t> prompt{0};
  Sampler strong({.repeat_penalty = 1.6f});  // 3 / 1.6 = 1.875 < 2: token 1 wins
  strong.accept(prompt);
  CHECK(strong.sample(logits) == 1);
  Sampler weak({.repeat_penalty = 1.4f});  // 3 / 1.4 = 2.14 > 2: token 0 still wins
  weak.accept(prompt);
  CHECK(weak.sample(logits) == 0);
  Sampler off({});  // 1.0: off, the default
  off.accept(prompt);
  CHECK(off.sample(logits) == 0);
}

TEST_CASE("repetition penalty: only the last repeat_last_n tokens count, and sampled tokens join them", "[sampling][penalty]") {
  // Window of 1, penalty 2, logits {2, 1.5}: 0 (nothing seen) → 1 (0 penalized to 1.0) → 0 (only 1 seen: 0.75).
  Sampler s({.repeat_penalty = 2.0f, .repeat_last_n = 1});
  const std::vector<float> logits{2.0f, 1.5f};
  CHECK(s.sample(logits) == 0);
  CHECK(s.sample(logits) == 1);
  CHECK(s.sample(logits) == 0);
  CHECK(s.recent() == std::vector<int32_t>{0});

  Sampler window({.repeat_penalty = 2.0f, .repeat_last_n = 2});
  window.accept(std::vector<int32_t>{0, 1, 2});
  CHECK(window.recent() == std::vector<int32_t>{1, 2});  // 0 fell out of the window
  CHECK(window.sample(std::vector<float>{3.0f, 2.9f, 0.0f}) == 0);  // 0 unpenalized; 2.9 → 1.45

  Sampler none({.repeat_penalty = 2.0f, .repeat_last_n = 0});  // 0: the penalty looks at nothing
  none.accept(std::vector<int32_t>{0});
  CHECK(none.recent().empty());
  CHECK(none.sample(std::vector<float>{3.0f, 2.0f}) == 0);

  Sampler all({.repeat_penalty = 2.0f, .repeat_last_n = -1});  // -1: every token seen
  all.accept(std::vector<int32_t>(100, 7));
  CHECK(all.recent().size() == 100);
}

TEST_CASE("repetition penalty: sampling uses the penalized logits, the caller's stay untouched", "[sampling][penalty]") {
  const std::vector<float> logits{std::log(4.0f), 0.0f};  // p = 0.8, 0.2
  // Penalized logit ln4 / 2 = ln2: p = 2/3, 1/3. Draw many and compare with that, not with 0.8.
  std::map<int32_t, int> counts;
  const int n = 20000;
  Sampler fresh({.temperature = 1.0f, .seed = 3, .repeat_penalty = 2.0f, .repeat_last_n = 1});
  for (int i = 0; i < n; ++i) {
    fresh.accept(std::vector<int32_t>{0});  // keep 0 as the one recent token
    ++counts[fresh.sample(logits)];
  }
  const double expected = n * 2.0 / 3.0;
  CHECK(std::fabs(counts[0] - expected) < 5 * std::sqrt(expected));
  CHECK(logits[0] == std::log(4.0f));
}

TEST_CASE("distribution_after: the penalty counts tokens not yet seen, and the sampler does not change", "[sampling][penalty]") {
  // Window of 2, penalty 2, logits ln 4, ln 2, 0 (p ∝ 4, 2, 1). recent = {0}; then_seen = {1}.
  const std::vector<float> logits{std::log(4.0f), std::log(2.0f), 0.0f};
  Sampler s({.temperature = 1.0f, .repeat_penalty = 2.0f, .repeat_last_n = 2});
  s.accept(std::vector<int32_t>{0});
  // Both 0 and 1 penalized: weights 4^(1/2) = 2, 2^(1/2) = √2, 1.
  const std::vector<float> both = s.distribution_after(logits, std::vector<int32_t>{1});
  const double z = 2 + std::sqrt(2.0) + 1;
  CHECK(both[0] == Approx(2 / z));
  CHECK(both[1] == Approx(std::sqrt(2.0) / z));
  CHECK(both[2] == Approx(1 / z));
  CHECK(s.recent() == std::vector<int32_t>{0});  // unchanged
  // The window slides over recent then then_seen: {0, 1, 2} keeps {1, 2}, so 0 is free again.
  const std::vector<float> slid = s.distribution_after(logits, std::vector<int32_t>{1, 2});
  CHECK(slid[0] == Approx(4 / (4 + std::sqrt(2.0) + 1)));
  // Nothing extra: exactly what sample() draws from, i.e. the one penalty of the recent token.
  const std::vector<float> now = s.distribution_after(logits);
  CHECK(now[0] == Approx(2.0 / 5.0));
  // Without a penalty it is distribution() itself.
  Sampler plain({.temperature = 1.0f});
  CHECK(plain.distribution_after(logits, std::vector<int32_t>{0, 1}) == plain.distribution(logits));
  // Greedy: one-hot on the penalized argmax (ln 4 / 2 = ln 2 ties with token 1: the lower id wins).
  Sampler greedy({.repeat_penalty = 2.0f});
  CHECK(greedy.distribution_after(logits, std::vector<int32_t>{0}) == std::vector<float>{1.0f, 0.0f, 0.0f});
  CHECK(greedy.distribution_after(logits, std::vector<int32_t>{0, 1}) == std::vector<float>{1.0f, 0.0f, 0.0f});
  Sampler strong({.repeat_penalty = 3.0f});
  CHECK(strong.distribution_after(logits, std::vector<int32_t>{0}) == std::vector<float>{0.0f, 1.0f, 0.0f});
}

TEST_CASE("draw refuses a distribution with no mass instead of returning some token", "[sampling]") {
  Sampler s({.temperature = 1.0f});
  CHECK_THROWS_AS(s.draw(std::vector<float>{0.0f, 0.0f, 0.0f}), std::invalid_argument);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(s.draw(std::vector<float>{nan, nan, nan}), std::invalid_argument);
  // NaN entries are never drawn; the positive ones are.
  for (int i = 0; i < 100; ++i) CHECK(s.draw(std::vector<float>{nan, 1.0f, 0.0f}) == 1);
}

TEST_CASE("repetition penalty: bad parameters are refused, by the sampler and by the flags", "[sampling][penalty]") {
  REQUIRE_THROWS(Sampler({.repeat_penalty = 0.0f}));
  REQUIRE_THROWS(Sampler({.repeat_last_n = -2}));
  // The command line as one string (CLI11 splits it as a shell would); "" when it parses.
  CommonOptions o;
  auto parse = [&o](const std::string& line) -> std::string {
    CLI::App app;
    o = CommonOptions{};
    add_common_options(app, o);
    try {
      app.parse(line, /*program_name_included=*/false);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(parse("--repeat-penalty 0") == "--repeat-penalty: must be more than 0, not '0'");
  CHECK(parse("--repeat-penalty nan") == "--repeat-penalty: must be a finite number, not 'nan'");
  CHECK(parse("--repeat-last-n -2") == "--repeat-last-n: must be at least -1, not '-2'");
  CHECK(parse("--repeat-penalty 1.1 --repeat-last-n -1").empty());
  REQUIRE(parse("--repeat-penalty 1.3 --repeat-last-n 32").empty());
  CHECK(o.sampling.repeat_penalty == 1.3f);
  CHECK(o.sampling.repeat_last_n == 32);
  CHECK(CommonOptions{}.sampling.repeat_penalty == 1.0f);  // off unless asked for
  CHECK(CommonOptions{}.sampling.repeat_last_n == 64);     // llama.cpp's default window
}
