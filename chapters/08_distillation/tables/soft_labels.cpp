#include "soft_labels.hpp"

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/run_record.hpp"    // top_logits
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/table.hpp"

namespace infer::distill {
namespace {

const std::vector<double> kTemperatures = {1, 2, 4};

// The next-token logits [V] after `text`.
std::vector<float> next_logits(LoadedModel& m, const std::string& text) {
  const std::vector<int32_t> ids = m.tokenizer.encode(text);
  GroupedKvCache cache(m.model.config(), std::ssize(ids), m.model.device());
  return m.model.forward(ids, 0, cache).to(Device::cpu()).to_vector();
}

// softmax(z / T) at the ids of `top`, normalised over the logits `over` (all V, or the top k) and,
// when `tail` is not empty, one more bucket holding the logits `tail` (the rest of the V).
std::vector<double> probabilities(std::span<const float> over, const TopLogits& top, double T,
                                  std::span<const float> tail = {}) {
  double m = -INFINITY, sum = 0;
  for (float x : over) m = std::max(m, x / T);
  for (float x : tail) m = std::max(m, x / T);
  for (float x : over) sum += std::exp(x / T - m);
  for (float x : tail) sum += std::exp(x / T - m);  // the bucket: Σ_tail exp(z / T), one term of the normaliser
  std::vector<double> p;
  for (const auto& [id, logit] : top) p.push_back(std::exp(logit / T - m) / sum);
  return p;
}

std::string shown(const Tokenizer& tokenizer, int32_t id) {
  std::string s = tokenizer.decode({id});
  for (char& c : s)
    if (c == '\n') c = ' ';
  return "\"" + s + "\"";
}

}  // namespace

void print_soft_label_tables(LoadedModel& m, const CommonOptions& o, int k, nlohmann::json& figures) {
  const std::vector<std::string> phrases = {"She poured the milk into the", "The capital of France is",
                                            "In the beginning God created the"};
  Table top5("Soft labels: the teacher's five most likely next tokens, with their probabilities at T = 1",
             {"phrase", "1st", "2nd", "3rd", "4th", "5th", "top-5 mass", "p1/p3 at T=1", "T=2", "T=4", "√(ratio at T=1)"});
  Table flat(fmt::format("Temperature flattens the label: \"{}\", the same five tokens at T = 1, 2, 4", phrases[0]),
             {"T", "normalised over", "1st", "2nd", "3rd", "4th", "5th", "the other tokens", "p1/p3"});
  for (const std::string& phrase : phrases) {
    const std::vector<float> z = next_logits(m, phrase);
    const TopLogits top = top_logits(z, 5);
    std::vector<std::string> row = {phrase};
    double mass = 0;
    const std::vector<double> p1 = probabilities(z, top, 1.0);
    for (std::size_t i = 0; i < top.size(); ++i) {
      row.push_back(fmt::format("{} {:.3f}", shown(m.tokenizer, top[i].first), p1[i]));
      mass += p1[i];
    }
    row.push_back(fmt::format("{:.3f}", mass));
    nlohmann::json fig = {{"phrase", phrase}, {"top5_mass", mass}};
    for (double T : kTemperatures) {
      const std::vector<double> p = probabilities(z, top, T);
      row.push_back(fmt::format("{:.2f}", p[0] / p[2]));
      fig["ratio_top1_top3"].push_back({{"T", T}, {"ratio", p[0] / p[2]}});
      if (&phrase != &phrases[0]) continue;
      std::vector<float> kept_logits, tail_logits;  // what the teacher file keeps: the k largest, and the rest as one bucket
      const TopLogits all_sorted = top_logits(z, static_cast<int>(z.size()));
      for (std::size_t i = 0; i < all_sorted.size(); ++i) (std::ssize(kept_logits) < k ? kept_logits : tail_logits).push_back(all_sorted[i].second);
      for (const int label : {0, 1, 2}) {  // all V; the top k + tail (the loss); the top k renormalised (the ablation)
        const std::vector<double> q = label == 0 ? p : probabilities(kept_logits, top, T, label == 1 ? std::span<const float>(tail_logits) : std::span<const float>());
        const std::string over = label == 0 ? fmt::format("all {}", z.size())
                                 : label == 1 ? fmt::format("top {} + tail (the loss)", k) : fmt::format("top {} renormalised", k);
        std::vector<std::string> frow = {fmt::format("{:g}", T), over};
        double kept = 0;
        for (std::size_t i = 0; i < q.size(); ++i) frow.push_back(fmt::format("{} {:.3f}", shown(m.tokenizer, top[i].first), q[i])), kept += q[i];
        frow.push_back(fmt::format("{:.3f}", 1.0 - kept));
        frow.push_back(fmt::format("{:.2f}", q[0] / q[2]));
        flat.add_row(frow);
      }
    }
    row.push_back(fmt::format("{:.2f}", std::sqrt(p1[0] / p1[2])));
    for (std::size_t i = 0; i < top.size(); ++i)
      fig["top5"].push_back({{"token", m.tokenizer.decode({top[i].first})}, {"id", top[i].first}, {"p", p1[i]}});
    top5.add_row(row);
    figures["soft_labels"].push_back(fig);
  }
  top5.add_note("p1/p3: the ratio of the most likely token's probability to the third's. Since p_T(i) ∝ exp(z_i / T), "
                "the ratio at T is the ratio at T = 1 raised to 1/T: the square root at T = 2 (last column), the "
                "fourth root at T = 4. The course's teacher shows 2.24 → 1.50 at T = 2.");
  flat.add_note(fmt::format("Over all {} tokens a high T hands most of the mass to the long tail of unlikely tokens. "
                            "The offline teacher file keeps the top {} and the tail's total as one more bucket: the "
                            "label the student is trained on, exact for the kept tokens at every T. Renormalising the "
                            "top {} instead (the ablation) hands the tail's mass to the kept tokens.",
                            m.model.config().vocab_size, k, k));
  flat.add_note("A hard label keeps only the text's actual next token; the soft label keeps the teacher's near-misses, "
                "and a higher T gives them more weight in the loss (its gradient is then scaled by T² to compensate).");
  for (const Table* t : {&top5, &flat}) {
    t->emit(o.csv_path);
  }
}

}  // namespace infer::distill
