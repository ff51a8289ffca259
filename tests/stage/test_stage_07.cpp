// Stage 07 against stage 03: greedy speculative decoding must produce chapter 03's greedy tokens
// — and, because a verification pass computes each position exactly as a decode step does
// (ops::matmul_t keeps a row's bits for up to 16 rows), the same logits bit for bit — for every
// draft and γ. Also: a draft that is always wrong (every guess rejected), the target as its own
// draft (every guess accepted), cache roll-back, and the rule on the real model's distributions.
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "catch_compat.hpp"

#include "cached_generate.hpp"
#include "grouped_kv_cache.hpp"
#include "model_drafter.hpp"
#include "prompt_lookup.hpp"
#include "quantize_model.hpp"
#include "speculative_decode.hpp"
#include "stage_prompts.hpp"
#include "test_support.hpp"

using namespace infer;
using infer::stage::kPrompts;

namespace {

constexpr int kTokens = 64;
constexpr int kCapacity = 128;

// Guesses the target's own greedy token plus one: every guess is wrong.
class AlwaysWrong : public Drafter {
 public:
  explicit AlwaysWrong(const Llama& target)
      : inner_("target", first_layers(target, target.config().n_layers), kCapacity, {}), vocab_(target.config().vocab_size) {}
  std::string name() const override { return "always wrong"; }
  Draft propose(std::span<const int32_t> context, int gamma) override {
    Draft d = inner_.propose(context, gamma);
    for (int32_t& t : d.tokens) t = (t + 1) % vocab_;
    return d;
  }

 private:
  ModelDrafter inner_;
  int vocab_;
};

Generation plain_greedy(LoadedModel& m, const std::vector<int32_t>& prompt) {
  GroupedKvCache cache(m.model.config(), kCapacity, m.model.device());
  Sampler greedy(SamplingParams{});
  return generate_cached(m.model, m.tokenizer, prompt, cache, greedy, {.n_predict = kTokens, .stop_at_end = false, .top_logits = 5});
}

SpeculativeGeneration speculative_greedy(LoadedModel& m, Drafter& drafter, const std::vector<int32_t>& prompt, int gamma,
                                         GroupedKvCache& cache) {
  Sampler greedy(SamplingParams{});
  return generate_speculative(m.model, cache, drafter, m.tokenizer, prompt, greedy,
                              {.gamma = gamma, .n_predict = kTokens, .stop_at_end = false, .top_logits = 5});
}

}  // namespace

TEST_CASE("greedy speculative decoding gives chapter 03's tokens and logits, for every draft and gamma", "[stage][stage07]") {
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  std::map<std::string, std::unique_ptr<Drafter>> drafts;
  drafts["Q4_1 self-draft"] = std::make_unique<ModelDrafter>(
      "Q4_1", quant::packed_copy(t, quant::keep_reference(t), quant::PackedFormat::q4_1), kCapacity, SamplingParams{});
  drafts["first 8 layers"] = std::make_unique<ModelDrafter>("first 8", first_layers(t, 8), kCapacity, SamplingParams{});
  drafts["prompt lookup"] = std::make_unique<PromptLookupDrafter>();
  drafts["target itself"] = std::make_unique<ModelDrafter>("target", first_layers(t, t.config().n_layers), kCapacity, SamplingParams{});
  drafts["always wrong"] = std::make_unique<AlwaysWrong>(t);

  // The two checks of the rule's extremes run the whole target as a draft, γ steps a round, so
  // they take two prompts at γ = 3; the real drafts take every prompt and γ.
  const auto is_extreme = [](const std::string& name) { return name == "always wrong" || name == "target itself"; };
  for (std::size_t p = 0; p < kPrompts.size(); ++p) {
    const std::string& prompt_text = kPrompts[p];
    const std::vector<int32_t> prompt = m->tokenizer.encode(prompt_text);
    const Generation plain = plain_greedy(*m, prompt);
    for (auto& [name, drafter] : drafts)
      for (int gamma : {1, 3, 5}) {
        if (is_extreme(name) && (gamma != 3 || p >= 2)) continue;
        INFO("prompt: " << prompt_text << "; draft: " << name << "; γ = " << gamma);
        GroupedKvCache cache(t.config(), kCapacity);
        const SpeculativeGeneration spec = speculative_greedy(*m, *drafter, prompt, gamma, cache);
        REQUIRE(spec.steps.size() == plain.steps.size());
        for (std::size_t s = 0; s < spec.steps.size(); ++s) {
          INFO("step " << s);
          REQUIRE(spec.steps[s].token == plain.steps[s].token);
          REQUIRE(spec.steps[s].top == plain.steps[s].top);  // ids and logits, bit for bit
        }
        const SpeculativeStats& st = spec.stats;
        if (name == "always wrong") CHECK(st.accepted == 0);
        if (name == "target itself") CHECK(st.accepted == st.drafted);
        if (name == "target itself") CHECK(st.alpha() == 1.0);
        // Every token comes from a round or the prefill.
        CHECK(st.round_tokens + 1 == std::ssize(spec.steps));
      }
  }
}

TEST_CASE("after rejections, the rolled-back caches continue exactly like a cold run", "[stage][stage07]") {
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  ModelDrafter draft("Q4_1", quant::packed_copy(t, quant::keep_reference(t), quant::PackedFormat::q4_1), kCapacity, {});
  const std::vector<int32_t> prompt = m->tokenizer.encode(kPrompts[1]);
  GroupedKvCache cache(t.config(), kCapacity);
  const SpeculativeGeneration spec = speculative_greedy(*m, draft, prompt, 5, cache);
  REQUIRE(spec.stats.accepted < spec.stats.drafted);  // there were rejections to roll back

  std::vector<int32_t> seq = prompt;
  for (const StepRecord& s : spec.steps) seq.push_back(s.token);
  // The target: the cache holds every token but the last; feeding it continues the sequence.
  REQUIRE(cache.length() == std::ssize(seq) - 1);
  const Tensor warm = m->model.forward(std::span(seq).last(1), std::ssize(seq) - 1, cache);
  GroupedKvCache cold_cache(t.config(), kCapacity);
  const Tensor cold = m->model.forward(seq, 0, cold_cache);
  const std::vector<float> a = warm.to_vector(), b = cold.to_vector();
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(b[i])));
  }
  // Not bit for bit: the cold run computes every position in one prefill (sgemm), the warm
  // cache holds positions from decode and verification passes. Same function, other rounding.
  CHECK(max_diff <= 1e-4 * max_abs);
  CHECK(argmax(std::span<const float>(a)) == argmax(std::span<const float>(b)));

  // The draft: its next guess after the accepted sequence equals a fresh draft's.
  ModelDrafter fresh("Q4_1", quant::packed_copy(t, quant::keep_reference(t), quant::PackedFormat::q4_1), kCapacity, {});
  CHECK(draft.propose(seq, 3).tokens == fresh.propose(seq, 3).tokens);
}

TEST_CASE("on the real model, the rule's first token follows the target's softmax at temperature 1", "[stage][stage07]") {
  // p: the target's next-token distribution after a prefix; q: the first 20 layers' (a poor
  // draft, so that rejections and the residual matter). 200 000 rounds of one guess drawn from q.
  // Chi-square over the tokens expected at least 50 times, plus one bin for all others.
  // Power: a shift of 0.005 in a bin of probability 0.1 has noncentrality 200 000 · 0.005² / 0.1
  // = 50, detected at the 0.1% level with probability above 0.99.
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  const std::vector<int32_t> prefix = m->tokenizer.encode("My favourite thing to eat for breakfast is");
  const SamplingParams at_t1{.temperature = 1.0f, .seed = 5};
  Sampler sampler(at_t1);
  GroupedKvCache cache(t.config(), kCapacity);
  const Tensor logits = m->model.forward(prefix, 0, cache);
  const std::vector<float> p = sampler.distribution(std::span<const float>(logits.host<float>(), static_cast<std::size_t>(logits.numel())));
  ModelDrafter draft("first 20 layers", first_layers(t, 20), kCapacity, at_t1);
  const Draft probe = draft.propose(prefix, 1);
  REQUIRE(probe.q.size() == 1);
  const std::vector<float>& q = probe.q[0];

  constexpr int64_t n = 200'000;
  Sampler draws(SamplingParams{.temperature = 1.0f, .seed = 6});
  std::vector<int64_t> counts(p.size(), 0);
  int64_t accepted = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t x = draws.draw(q);
    const RoundOutcome r = accept_draft(std::vector<std::vector<float>>{p, p}, Draft{{x}, {q}}, draws);
    accepted += r.accepted;
    ++counts[r.accepted == 1 ? x : r.next];
  }
  double chi2 = 0, other_expected = 0;
  int64_t other_count = 0, bins = 0;
  for (std::size_t v = 0; v < p.size(); ++v) {
    const double e = static_cast<double>(p[v]) * n;
    if (e >= 50) {
      chi2 += (static_cast<double>(counts[v]) - e) * (static_cast<double>(counts[v]) - e) / e;
      ++bins;
    } else {
      other_expected += e;
      other_count += counts[v];
    }
  }
  chi2 += (static_cast<double>(other_count) - other_expected) * (static_cast<double>(other_count) - other_expected) / other_expected;
  // Critical values of chi-square at 0.1% for `bins` degrees of freedom (bins + 1 cells):
  // Wilson–Hilferty's approximation, good to a few tenths here.
  const double k = static_cast<double>(bins), z = 3.090;
  const double critical = k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
  INFO(bins << " bins + other; chi-square " << chi2 << ", critical " << critical << "; draft acceptance "
            << static_cast<double>(accepted) / n);
  REQUIRE(bins >= 5);
  CHECK(accepted < n);  // the draft disagrees often enough for the residual to matter
  CHECK(chi2 < critical);
}
