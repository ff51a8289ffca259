// Stage 07 against stage 03: greedy speculative decoding must produce chapter 03's greedy tokens
// — and, because a verification pass computes each position exactly as a decode step does
// (ops::matmul_t keeps a row's bits for up to 16 rows), the same logits bit for bit — for every
// draft and γ. Also: a draft that is always wrong (every guess rejected), the target as its own
// draft (every guess accepted), cache roll-back, the rule on the real model's distributions, the
// repetition penalty (greedy: chapter 03's penalized tokens), and sampling end to end (top-k,
// top-p, prompt lookup, the penalty) against the plain sampler's distribution.
//
// What the end-to-end sampling test can see in 400 tokens a case: a token outside the target's
// top-k/top-p set, a penalty history that misses the guesses, a rejection that draws from p
// instead of the residual (caught in the draft-at-T-0.5 case, chi-square 46 against 27.9 when
// tried). Smaller errors of the rule itself are the job of the 10⁶-draw tests in
// tests/chapter_unit/test_speculative.cpp and the 200 000-round test below.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"

#include "cached_generate.hpp"
#include "grouped_kv_cache.hpp"
#include "model_drafter.hpp"
#include "prompt_lookup.hpp"
#include "pack_model.hpp"
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
        // The rounds' log (the report's picture) tells the same story as the counters and tokens:
        // each round's kept guesses, then the target's own token, are the next generated tokens.
        REQUIRE(std::ssize(spec.rounds) == st.rounds);
        std::size_t at = 1;  // steps[0] came from the prefill
        int64_t accepted = 0;
        for (const RoundLog& r : spec.rounds) {
          accepted += r.accepted;
          CHECK(r.bonus == (r.accepted == std::ssize(r.guesses)));
          for (int i = 0; i < r.emitted; ++i, ++at) {
            REQUIRE(at < spec.steps.size());
            CHECK(spec.steps[at].token == (i < r.accepted ? r.guesses[i] : r.next));
            CHECK(spec.sources[at] == (i < r.accepted ? TokenSource::drafted : TokenSource::target));
          }
        }
        CHECK(at == spec.steps.size());
        CHECK(accepted == st.accepted);
      }
  }
}

TEST_CASE("after rejections, the rolled-back caches continue exactly like a cold run", "[stage][stage07][reference]") {
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

// ---------------------------------------------------------------------------------------------
// The repetition penalty and sampling, end to end through generate_speculative.

namespace {

const SamplingParams kPenalty{.repeat_penalty = 1.3f, .repeat_last_n = 64};

Generation plain_run(LoadedModel& m, const std::vector<int32_t>& prompt, const SamplingParams& sampling) {
  GroupedKvCache cache(m.model.config(), kCapacity, m.model.device());
  Sampler sampler(sampling);
  return generate_cached(m.model, m.tokenizer, prompt, cache, sampler, {.n_predict = kTokens, .stop_at_end = false, .top_logits = 5});
}

}  // namespace

TEST_CASE("greedy with a repetition penalty: speculative decoding gives chapter 03's penalized tokens", "[stage][stage07]") {
  // Row i of a round must count the guesses d1 … di as seen; without that the rounds decode
  // unpenalized and the tokens part from the plain run's at the first repeat the penalty moves.
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  int prompts_the_penalty_changes = 0;
  for (std::size_t p : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    const std::vector<int32_t> prompt = m->tokenizer.encode(kPrompts[p]);
    const Generation plain = plain_run(*m, prompt, kPenalty);
    const Generation unpenalized = plain_run(*m, prompt, {});
    bool differs = false;
    for (std::size_t s = 0; s < plain.steps.size(); ++s) differs |= plain.steps[s].token != unpenalized.steps[s].token;
    prompts_the_penalty_changes += differs ? 1 : 0;

    std::map<std::string, std::unique_ptr<Drafter>> drafts;
    drafts["Q4_1 self-draft"] = std::make_unique<ModelDrafter>(
        "Q4_1", quant::packed_copy(t, quant::keep_reference(t), quant::PackedFormat::q4_1), kCapacity, kPenalty);
    drafts["prompt lookup"] = std::make_unique<PromptLookupDrafter>();
    for (auto& [name, drafter] : drafts) {
      INFO("prompt: " << kPrompts[p] << "; draft: " << name);
      GroupedKvCache cache(t.config(), kCapacity);
      Sampler sampler(kPenalty);
      const SpeculativeGeneration spec = generate_speculative(
          m->model, cache, *drafter, m->tokenizer, prompt, sampler, {.gamma = 3, .n_predict = kTokens, .stop_at_end = false});
      REQUIRE(spec.steps.size() == plain.steps.size());
      for (std::size_t s = 0; s < spec.steps.size(); ++s) {
        INFO("step " << s);
        REQUIRE(spec.steps[s].token == plain.steps[s].token);
      }
      if (name != "prompt lookup") CHECK(spec.stats.accepted > 0);
    }
  }
  CHECK(prompts_the_penalty_changes >= 2);  // the check has something to catch
}

namespace {

// The probability integral transform of sampled tokens against the distribution they should
// follow. For token x drawn from p, with the vocabulary ordered most likely first,
//   u = P(tokens before x) + v · p(x),   v uniform in [0, 1)
// is uniform in [0, 1) — and for a sequence, each u is uniform given everything before it, so
// the u's of one generation are independent (Rosenblatt 1952). A sampler that draws from any
// other distribution moves mass between ranks and the u's pile up somewhere. The reference p of
// step t is computed apart from the code under test: one prefill over the whole generated
// sequence, then the plain sampler's steps — the penalty over the tokens generated before t
// (the samplers here saw no prompt), then Sampler::distribution.
struct Pit {
  static constexpr int kBins = 10;
  std::vector<int64_t> bins = std::vector<int64_t>(kBins, 0);
  int64_t outside_support = 0;  // tokens the reference gives probability 0: always wrong
  int64_t n = 0;

  void add(LoadedModel& m, const std::vector<int32_t>& prompt, const std::vector<StepRecord>& steps,
           const SamplingParams& sampling, std::mt19937_64& rng) {
    std::vector<int32_t> seq = prompt;
    for (const StepRecord& s : steps) seq.push_back(s.token);
    GroupedKvCache cache(m.model.config(), std::ssize(seq), m.model.device());
    const Tensor logits = m.model.forward(std::span(seq).first(seq.size() - 1), 0, cache, /*all_logits=*/true).to(Device::cpu());
    const int64_t V = logits.dim(1);
    const Sampler plain(sampling);
    std::uniform_real_distribution<double> v01(0.0, 1.0);
    for (std::size_t t = 0; t < steps.size(); ++t) {
      const float* row = logits.host<float>() + (static_cast<int64_t>(prompt.size()) - 1 + static_cast<int64_t>(t)) * V;
      std::vector<float> penalized(row, row + V);
      const std::size_t from = sampling.repeat_last_n < 0 ? 0 : t - std::min<std::size_t>(t, sampling.repeat_last_n);
      std::vector<int32_t> recent;
      for (std::size_t i = from; i < t; ++i) recent.push_back(steps[i].token);
      apply_repetition_penalty(penalized, recent, sampling.repeat_penalty);
      const std::vector<float> p = plain.distribution(penalized);
      const int32_t x = steps[t].token;
      ++n;
      if (!(p[x] > 0)) {
        ++outside_support;
        continue;
      }
      double before = 0;  // the mass of the tokens ranked ahead of x (more likely, or as likely with a lower id)
      for (int64_t v = 0; v < V; ++v)
        if (p[v] > p[x] || (p[v] == p[x] && v < x)) before += p[v];
      const double u = std::min(before + v01(rng) * p[x], std::nextafter(1.0, 0.0));
      ++bins[static_cast<std::size_t>(u * kBins)];
    }
  }
  // Σ (observed − expected)² / expected over equal bins; kBins − 1 = 9 degrees of freedom.
  double chi_square() const {
    const double e = static_cast<double>(n - outside_support) / kBins;
    double chi2 = 0;
    for (int64_t b : bins) chi2 += (static_cast<double>(b) - e) * (static_cast<double>(b) - e) / e;
    return chi2;
  }
};

constexpr double kChi2Critical9 = 27.88;  // chi-square's 0.1% critical value at 9 degrees of freedom

}  // namespace

TEST_CASE("sampled speculative decoding follows the plain sampler's distribution, end to end", "[stage][stage07]") {
  // Each case generates with the real target and a real draft, then tests the generated tokens
  // against the plain sampler's step-by-step distribution (Pit above). The draft differs in
  // kind: a model draft whose top-k or top-p set is not the target's (p and q have different
  // supports), prompt lookup (q one-hot, in sampling mode), and a model draft under the
  // repetition penalty, whose history must grow with the guesses inside a round.
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  struct Case {
    std::string name;
    SamplingParams sampling;
    std::string draft;  // "Q4_1" (chapter 06's packed self-draft) or "prompt lookup"
    std::string prompt;
    float draft_temperature = 0;  // 0: the target's
  };
  const std::vector<Case> cases = {
      {"top-k 40, a model draft at T 0.5", {.temperature = 1.0f, .top_k = 40, .seed = 11}, "Q4_1", kPrompts[1], 0.5f},
      {"top-p 0.9 at T 0.8, a model draft", {.temperature = 0.8f, .top_p = 0.9f, .seed = 12}, "Q4_1", kPrompts[0]},
      // T 0.7, not 1: at T 1 this small model's samples soon leave the repeated pattern, and the
      // guesses prompt lookup then gets kept hang on the sampled text (17 to 57 over 11 seeds, Zen 4);
      // at T 0.7 it kept 115 to 203 of about 600 over seeds 1 to 10, far above the floor below.
      {"prompt lookup (q one-hot), T 0.7",
       {.temperature = 0.7f, .seed = 13},
       "prompt lookup",
       "Repeat after me: one two three four five six seven eight nine ten. one two three four five six seven eight nine ten. one two"},
      {"repetition penalty 1.3, a model draft",
       {.temperature = 1.0f, .top_k = 40, .seed = 14, .repeat_penalty = 1.3f, .repeat_last_n = 64},
       "Q4_1",
       kPrompts[4]},
  };
  constexpr int kSampled = 400;
  std::mt19937_64 rng(2024);
  const Llama q4_1 = quant::packed_copy(t, quant::keep_reference(t), quant::PackedFormat::q4_1);
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<int32_t> prompt = m->tokenizer.encode(c.prompt);
    const int64_t capacity = std::ssize(prompt) + kSampled + 8;
    SamplingParams draft_sampling = c.sampling;
    draft_sampling.seed += 100;
    if (c.draft_temperature > 0) draft_sampling.temperature = c.draft_temperature;
    std::unique_ptr<Drafter> drafter;
    if (c.draft == "prompt lookup") drafter = std::make_unique<PromptLookupDrafter>();
    else drafter = std::make_unique<ModelDrafter>(c.draft, first_layers(q4_1, t.config().n_layers), capacity, draft_sampling);
    GroupedKvCache cache(t.config(), capacity);
    Sampler sampler(c.sampling);
    const SpeculativeGeneration spec = generate_speculative(
        m->model, cache, *drafter, m->tokenizer, prompt, sampler, {.gamma = 4, .n_predict = kSampled, .stop_at_end = false});
    REQUIRE(std::ssize(spec.steps) == kSampled);
    // Both branches of the rule ran: guesses kept and guesses rejected.
    INFO("α = " << spec.stats.alpha() << " over " << spec.stats.drafted << " guesses");
    CHECK(spec.stats.accepted > 20);
    CHECK(spec.stats.accepted < spec.stats.drafted);

    Pit pit;
    pit.add(*m, prompt, spec.steps, c.sampling, rng);
    std::string bins;
    for (int64_t b : pit.bins) bins += std::to_string(b) + " ";
    INFO("PIT bins " << bins << "; chi-square " << pit.chi_square() << " (0.1% critical " << kChi2Critical9 << ")");
    CHECK(pit.outside_support == 0);
    CHECK(pit.chi_square() < kChi2Critical9);
  }
}
