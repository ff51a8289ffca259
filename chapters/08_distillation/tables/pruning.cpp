#include "pruning.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "layer_importance.hpp"
#include "measure/table.hpp"
#include "07_speculative_decoding/model_drafter.hpp"  // first_layers
#include "student.hpp"

namespace infer::distill {
namespace {

std::string kept_list(const std::vector<int>& keep) {
  std::string s;
  for (int l : keep) s += (s.empty() ? "" : " ") + std::to_string(l);
  return s;
}

}  // namespace

train::Student<float> pruned_start(const Llama& teacher, const PrunedStudent& p) {
  if (!p.width) return train::Student<float>::from_teacher(teacher, p.keep);
  return train::width_pruned(train::Student<float>::from_teacher(teacher, p.keep), *p.width);
}

std::vector<double> print_layer_importance(LoadedModel& m, std::span<const int32_t> calibration, int S,
                                           std::span<const int> depths, const CommonOptions& o, nlohmann::json& figures) {
  const int L = m.model.config().n_layers;
  std::vector<int> all(L);
  std::iota(all.begin(), all.end(), 0);
  std::vector<double> scores;
  {
    train::Student<float> whole = train::Student<float>::from_teacher(m.model, all);  // the teacher, in training form
    scores = train::block_influence(whole, calibration, S);
  }
  std::vector<int> rank(L);
  std::vector<int> order = all;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  for (int r = 0; r < L; ++r) rank[order[r]] = r + 1;

  std::vector<std::string> headers = {"layer", "block influence", "rank"};
  std::vector<std::vector<int>> keeps;
  for (int depth : depths) {
    headers.push_back(fmt::format("kept at {}", depth));
    keeps.push_back(train::layers_to_keep(scores, depth));
  }
  Table t(fmt::format("Layer importance: block influence = 1 − cos(stream in, stream out), mean over {} calibration "
                      "tokens (the end of Judges)", calibration.size()),
          headers);
  for (int l = 0; l < L; ++l) {
    std::vector<std::string> row = {std::to_string(l), fmt::format("{:.4f}", scores[l]),
                                    std::to_string(rank[l])};
    for (const std::vector<int>& keep : keeps)
      row.emplace_back(std::binary_search(keep.begin(), keep.end(), l) ? "✓" : "");
    t.add_row(row);
    figures["layer_importance"].push_back({{"layer", l}, {"block_influence", scores[l]}});
  }
  t.add_note("A block whose output points where its input did (score near 0) changes little of what later blocks "
             "read, so it goes first (ShortGPT); each depth keeps its highest-scoring layers in their order.");
  t.emit(o.csv_path);
  return scores;
}

std::vector<PrunedStudent> print_pruned_students(LoadedModel& m, const HeldOut& h, std::span<const double> scores,
                                                 std::span<const int> depths, const CommonOptions& o,
                                                 nlohmann::json& figures) {
  Table t(fmt::format("The pruned students before training: held-out text (Ruth, {} tokens in windows of {})",
                      h.tokens.size(), h.window),
          {"model", "layers", "parameters", "perplexity", "NLL (nats/token)", "top-1 = next token",
           "greedy agreement with the teacher", "layers kept"});
  auto add = [&](const std::string& name, const LlamaConfig& c, const Score& s, const std::string& kept) {
    t.add_row({name, std::to_string(c.n_layers), fmt::format("{:.1f} M", static_cast<double>(c.parameter_count()) / 1e6),
               fmt::format("{:.2f}", s.perplexity), fmt::format("{:.3f}", s.mean_nll), cell::percent(s.next_token),
               cell::percent(s.agreement.rate()), kept});
  };
  const Score teacher = teacher_score(h);
  add("teacher", m.model.config(), teacher, "all");
  figures["pruned"].push_back({{"model", "teacher"}, {"layers", m.model.config().n_layers}, {"score", teacher.json()}});
  std::vector<PrunedStudent> out;
  for (int depth : depths) {
    PrunedStudent p{depth, train::layers_to_keep(scores, depth), {}, nullptr, {}};
    {
      train::Student<float> s = train::Student<float>::from_teacher(m.model, p.keep);
      Llama pruned = train::to_llama(s);
      p.before = score_on(pruned, h, fmt::format("pruned to {}", depth));
      add(fmt::format("pruned by importance to {}", depth), pruned.config(), p.before, kept_list(p.keep));
    }
    Llama first = first_layers(m.model, depth);
    const Score naive = score_on(first, h, fmt::format("first {}", depth));
    add(fmt::format("  first {} layers (naive cut)", depth), first.config(), naive, fmt::format("0–{}", depth - 1));
    figures["pruned"].push_back({{"model", "importance"}, {"layers", depth}, {"keep", p.keep}, {"score", p.before.json()}});
    figures["pruned"].push_back({{"model", "first_layers"}, {"layers", depth}, {"score", naive.json()}});
    out.push_back(std::move(p));
  }
  t.add_note("No training yet: the students are the teacher's own layers with the rest removed. The naive cut (the "
             "first layers, then the final norm and the head) is chapter 07's layer-skip draft.");
  t.emit(o.csv_path);
  return out;
}

}  // namespace infer::distill
