// Sampling: greedy, temperature, top-k and top-p, and reproducibility for a seed.
#include <cmath>
#include <map>
#include <vector>

#include <catch2/catch.hpp>

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
    const double expected = p[static_cast<std::size_t>(id)] * n;
    REQUIRE(std::fabs(counts[id] - expected) < 5 * std::sqrt(expected));
  }
}

TEST_CASE("bad parameters are refused", "[sampling]") {
  REQUIRE_THROWS(Sampler({.temperature = -1.0f}));
  REQUIRE_THROWS(Sampler({.temperature = 1.0f, .top_p = 0.0f}));
}
