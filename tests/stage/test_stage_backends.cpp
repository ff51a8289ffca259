// The fast CPU backend against the reference one on the real model (tensor/ops.hpp): the fast
// path changes what a forward pass costs, not what it computes.
//
// Contract, for two of the stage prompts (prose and code):
//   - the prefill pass: the logits after every prompt position agree within kTolerance of the
//     largest logit;
//   - greedy decoding through chapter 03's cache, kTokens tokens: identical tokens, and every
//     logit of every step within the same bound.
// Why this bound: each operation of the fast path is within its float rounding of the reference's
// exact-then-rounded result (tests/unit/test_backends.cpp states the bound per operation, a
// few ulps for the elementwise ones, K·ε of Σ|xw| for a dot product of K terms); thirty layers
// of them, measured here, move the logits by ~1e-6 of the largest (see the WARN line), the size
// of the difference between the fast path's two matrix products (chapter 02's stage test).
// kTolerance leaves a factor of ten or more for other SIMD targets and BLAS builds; a wrong
// operation moves the logits by whole units.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "cached_generate.hpp"
#include "grouped_kv_cache.hpp"
#include "stage_prompts.hpp"
#include "test_support.hpp"

using namespace infer;
using test::ScopedCpuBackend;

namespace {

constexpr double kTolerance = 1e-4;  // of the largest logit of the pass
constexpr int kTokens = 16;

// max |a − b| over the logits of one pass, as a fraction of the largest |b|.
double relative_difference(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    largest = std::max(largest, std::fabs(double(b[i])));
  }
  return diff / largest;
}

struct Run {
  std::vector<float> prefill_logits;  // [P, V]: after every prompt position
  Generation greedy;                  // every step's logits (top_logits = V)
};

Run run_on(CpuBackend backend, LoadedModel& m, const std::vector<int32_t>& prompt) {
  ScopedCpuBackend on(backend);
  const LlamaConfig& c = m.model.config();
  Run r;
  {
    GroupedKvCache cache(c, std::ssize(prompt));
    r.prefill_logits = m.model.forward(prompt, 0, cache, /*all_logits=*/true).to_vector();
  }
  GroupedKvCache cache(c, std::ssize(prompt) + kTokens);
  Sampler greedy(SamplingParams{});
  r.greedy = generate_cached(m.model, m.tokenizer, prompt, cache, greedy,
                             {.n_predict = kTokens, .stop_at_end = false, .top_logits = c.vocab_size});
  return r;
}

// A step's logits by token id, from its complete top list.
std::vector<float> by_id(const TopLogits& top, int64_t vocab) {
  std::vector<float> out(static_cast<std::size_t>(vocab));
  for (const auto& [id, logit] : top) out[id] = logit;
  return out;
}

}  // namespace

TEST_CASE("the fast backend computes the reference backend's logits and greedy tokens on the real model", "[stage][backends]") {
  REQUIRE_MODEL(m);
  const int64_t V = m->model.config().vocab_size;
  double worst = 0;
  for (const std::string& text : {stage::kPrompts[0], stage::kPrompts[4]}) {
    INFO("prompt: " << text);
    const std::vector<int32_t> prompt = m->tokenizer.encode(text);
    const Run fast = run_on(CpuBackend::fast, *m, prompt);
    const Run ref = run_on(CpuBackend::reference, *m, prompt);

    for (int64_t p = 0; p < std::ssize(prompt); ++p) {
      INFO("prefill, position " << p);
      const std::span<const float> a(fast.prefill_logits.data() + p * V, V), b(ref.prefill_logits.data() + p * V, V);
      const double d = relative_difference(a, b);
      worst = std::max(worst, d);
      REQUIRE(d <= kTolerance);
    }
    REQUIRE(std::ssize(fast.greedy.steps) == kTokens);
    REQUIRE(std::ssize(ref.greedy.steps) == kTokens);
    for (int s = 0; s < kTokens; ++s) {
      INFO("step " << s + 1);
      REQUIRE(fast.greedy.steps[s].token == ref.greedy.steps[s].token);
      const double d = relative_difference(by_id(fast.greedy.steps[s].top, V), by_id(ref.greedy.steps[s].top, V));
      worst = std::max(worst, d);
      REQUIRE(d <= kTolerance);
    }
  }
  WARN(fmt::format("largest fast − reference logit difference: {:.2e} of the largest logit (tolerance {:.0e})", worst,
                   kTolerance));
}
