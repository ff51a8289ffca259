#include "agreement_alpha.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "model_drafter.hpp"  // first_layers
#include "speculative_decode.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "06_quantization/packed/packed_kernels.hpp"  // scheme_for
#include "06_quantization/quantize_model.hpp"
#include "06_quantization/tables/question_battery.hpp"  // wilson_interval

namespace infer::spec {

namespace {

// Chapter 06's agreement of the model behind a draft, over every position of the reference.
quant::AgreementCount agreement_of(LoadedModel& m, const std::string& flag, const Drafter& drafter,
                                   const quant::GreedyReference& reference) {
  if (const auto format = quant::parse_format_flag(flag)) {
    // As chapter 06 measures a scheme: its rounded weights in fp32. On a second Llama over the
    // target's weights (every layer, shared), whose matrices quantize_model replaces by their
    // rounded copies, so the target and the drafts that share its matrices keep theirs.
    Llama rounded = first_layers(m.model, m.model.config().n_layers);
    quant::quantize_model(rounded, quant::keep_reference(m.model), quant::scheme_for(*format).get());
    return quant::greedy_agreement_with(rounded, reference);
  }
  // Any other model draft (layers-K, another file, the target): its own model, through a Llama
  // that shares its weights (the drafter keeps its model for its own cache).
  const auto* md = dynamic_cast<const ModelDrafter*>(&drafter);
  if (md == nullptr) throw std::invalid_argument(fmt::format("agreement: draft {} has no model", flag));
  Llama model = first_layers(md->model(), md->model().config().n_layers);
  return quant::greedy_agreement_with(model, reference);
}

std::string ratio(const quant::AgreementCount& a) { return fmt::format("{}/{}", a.agreeing, a.positions); }

std::string interval(const quant::Interval& i) { return fmt::format("{:.2f}–{:.2f}", i.lo, i.hi); }

}  // namespace

AgreementAlpha measure_agreement_alpha(LoadedModel& m, const std::string& flag, Drafter& drafter,
                                       const quant::GreedyReference& reference, int gamma) {
  AgreementAlpha row{drafter.name(), agreement_of(m, flag, drafter, reference), {}, true};
  // The draft generating the reference's answers: greedy, so the tokens are the fp32 model's and
  // every checked guess sits at one of the reference's positions.
  for (std::size_t s = 0; s < reference.prompts.size(); ++s) {
    const std::vector<int32_t>& prompt = reference.prompts[s];
    const std::vector<int32_t>& answer = reference.continuations[s];
    GroupedKvCache cache(m.model.config(), std::ssize(prompt) + std::ssize(answer) + gamma + 1, m.model.device());
    Sampler greedy(SamplingParams{});
    const SpeculativeOptions options{.gamma = gamma, .n_predict = static_cast<int>(answer.size()), .stop_at_end = true,
                                     .top_logits = 0};
    const SpeculativeGeneration g = generate_speculative(m.model, cache, drafter, m.tokenizer, prompt, greedy, options);
    for (std::size_t i = 0; i < g.steps.size(); ++i)
      row.same_tokens = row.same_tokens && i < answer.size() && g.steps[i].token == answer[i];
    row.same_tokens = row.same_tokens && g.steps.size() == answer.size();
    for (const int64_t checked : g.stats.checked_at) row.alpha.positions += checked;
    row.alpha.agreeing += g.stats.accepted;
  }
  return row;
}

Table agreement_alpha_table(std::span<const AgreementAlpha> rows, int gamma, int64_t positions, std::size_t prompts) {
  Table t(fmt::format("α is the agreement: chapter 06's agreement with the fp32 model on its {} positions beside α of "
                      "the same weights as a draft at γ = {}, generating the same {} tokens",
                      positions, gamma, positions),
          {"draft", "agreement", "agreeing / positions", "agreement 95% CI", "α", "kept / checked", "α 95% CI",
           "intervals overlap", "tokens = fp32"});
  for (const AgreementAlpha& r : rows) {
    const quant::Interval a = quant::wilson_interval(r.agreement.agreeing, r.agreement.positions);
    const quant::Interval b = quant::wilson_interval(r.alpha.agreeing, r.alpha.positions);
    t.add_row({r.draft, fmt::format("{:.3f}", r.agreement.rate()), ratio(r.agreement), interval(a),
               fmt::format("{:.3f}", r.alpha.rate()), ratio(r.alpha), interval(b),
               a.lo <= b.hi && b.lo <= a.hi ? "yes" : "NO", r.same_tokens ? "✓" : "✗ DIFFERENT"});
  }
  t.add_note(fmt::format("agreement: chapter 06's measure (06_quantization/tables/agreement.hpp) — at each of the {} "
                         "positions of the fp32 model's greedy answers to its {} prompts, is the draft's top token after "
                         "the same prefix the fp32 model's? A quantized format's weights are rounded in place, as "
                         "chapter 06 rounds them. α: kept ÷ checked guesses of the draft generating those answers "
                         "(greedy: the same tokens, so the same positions). 95% Wilson intervals, as in chapter 06.",
                         positions, prompts));
  t.add_note("Each checked guess asks chapter 06's question at its position, but not every position gets a guess: "
             "a guess is checked only when every earlier guess of its round was kept, the position after a "
             "rejection holds the target's own token, and each answer's first token comes from the prefill. So α "
             "counts fewer positions (a wider interval), and the draft multiplies its packed bytes in another order "
             "than chapter 06's rounded fp32 weights, which can flip a near tie. Prompt lookup has no model to agree.");
  return t;
}

}  // namespace infer::spec
