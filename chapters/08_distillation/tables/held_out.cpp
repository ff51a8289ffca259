#include "held_out.hpp"

#include "03_gqa/grouped_kv_cache.hpp"

namespace infer::distill {

nlohmann::json Score::json() const {
  return {{"perplexity", perplexity}, {"mean_nll", mean_nll}, {"next_token_accuracy", next_token},
          {"agreement", agreement.rate()}, {"positions", agreement.positions}};
}

namespace {
Score scored(const TextEvaluation& e, const HeldOut& h) {
  return {e.perplexity(), e.mean_nll(), e.greedy_accuracy(h.tokens), greedy_agreement(e, h.teacher)};
}
}  // namespace

Score score_on(Llama& model, const HeldOut& h, const std::string& label) {
  return scored(evaluate_text<GroupedKvCache>(model, h.tokens, {.window = h.window, .chunk = 128, .progress_label = label}), h);
}

Score teacher_score(const HeldOut& h) { return scored(h.teacher, h); }

}  // namespace infer::distill
