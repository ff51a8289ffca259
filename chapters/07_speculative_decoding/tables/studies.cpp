#include "studies.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "agreement_alpha.hpp"
#include "analytic.hpp"
#include "make_drafter.hpp"
#include "measure/bandwidth.hpp"
#include "measure/svg_plot.hpp"
#include "measure/timing.hpp"
#include "model_drafter.hpp"
#include "06_quantization/packed/packed_kernels.hpp"  // the format names
#include "06_quantization/tables/quality_tables.hpp"  // chapter 06's answer length for agreement

namespace infer::spec {

namespace {

std::string verdict(double speedup) { return speedup < 1.0 ? "SLOWER" : "faster"; }

// "✓" when a greedy run gave the plain run's tokens, "—" when sampling (tokens may differ).
std::string same_tokens(const Timed& run, const Timed& plain, bool greedy) {
  if (!greedy) return "—";
  return run.tokens == plain.tokens ? "✓" : "✗ DIFFERENT";
}

}  // namespace

NamedRow& NamedRow::set(std::string_view header, std::string cell) {
  const auto it = std::find(headers_.begin(), headers_.end(), header);
  if (it == headers_.end()) throw std::logic_error(fmt::format("table row: no column \"{}\"", header));
  cells_[static_cast<std::size_t>(it - headers_.begin())] = std::move(cell);
  return *this;
}

std::vector<TextKind> text_kinds(const LoadedModel& m) {
  auto chat = [&](const std::string& question) {
    return m.tokenizer.encode(m.tokenizer.apply_chat_template({{"user", question}}));
  };
  return {
      {"chat answer", chat("Explain in a few sentences why the sky is blue.")},
      {"code", m.tokenizer.encode("def merge_sort(values):\n    \"\"\"Sort a list of numbers and return it.\"\"\"\n")},
      {"repeats its prompt",
       chat("Copy this text exactly: The old lighthouse keeper climbed the hundred steps every evening, lit the great "
            "lamp, and watched the ships pass safely by the rocks until morning.")},
  };
}

SpeculationStudy::SpeculationStudy(LoadedModel& m, const CommonOptions& o, StudyOptions s, nlohmann::json& figures)
    : m_(m), o_(o), s_(std::move(s)), figures_(figures), prompt_(encode_prompt(m, o)) {}

void SpeculationStudy::run() {
  // The formulas first: what α and the draft's cost predict, before anything is measured.
  for (const Table& t : {expected_tokens_table(), analytic_speedup_table({0.1, 0.2})}) t.emit(o_.csv_path);
  const BandwidthResult bw = measure_read_bandwidth();
  fmt::print("measured on {} threads; read bandwidth {:.2f} GB/s\n\n", bw.threads, bw.bytes_per_second / 1e9);
  figures_["read_bandwidth"] = bw.bytes_per_second;
  figures_["threads"] = bw.threads;

  const int max_gamma = std::max(s_.gamma, *std::max_element(s_.gammas.begin(), s_.gammas.end()));
  int64_t longest = std::ssize(prompt_) + o_.n_predict;
  for (const TextKind& t : text_kinds(m_)) longest = std::max(longest, std::ssize(t.prompt) + o_.n_predict);
  // α beside chapter 06's agreement needs greedy drafts and chapter 06's rounding (on the CPU);
  // its positions are the fp32 model's answers, generated once here.
  if (o_.sampling.temperature == 0.0f && m_.model.device().is_cpu()) {
    agreement_ = quant::greedy_reference(m_.model, m_.tokenizer, quant::QualityOptions{}.agree_tokens);
    for (std::size_t i = 0; i < agreement_->prompts.size(); ++i)
      longest = std::max(longest, std::ssize(agreement_->prompts[i]) + std::ssize(agreement_->continuations[i]));
  }
  const int64_t capacity = longest + max_gamma + 1;

  // Costs at the middle of a generation: the prompt's text repeated to prompt + n/2 tokens.
  const std::vector<int32_t> context =
      repeated_tokens(m_.tokenizer, o_.prompt, std::ssize(prompt_) + o_.n_predict / 2);
  std::vector<Drafter*> drafters;
  for (const std::string& name : s_.drafts) {
    fmt::print(stderr, "preparing draft {} ...\n", draft_label(name, s_.draft_model));
    MeasuredDraft d{name, draft_label(name, s_.draft_model), make_drafter(name, m_, o_, s_.draft_model, capacity)};
    if (const auto* md = dynamic_cast<const ModelDrafter*>(d.drafter.get()))
      d.bytes_per_guess = static_cast<double>(md->model().weights().bytes_per_token());
    drafters.push_back(d.drafter.get());
    drafts_.push_back(std::move(d));
  }
  costs_ = measure_costs(m_.model, context, max_gamma, drafters, s_.gamma, std::max(7, s_.repeats));
  for (std::size_t i = 0; i < drafts_.size(); ++i) drafts_[i].c = costs_.c[i];
  verify_cost_table();
  per_draft_table();
  agreement_table();
  gamma_sweep();
  texts_table();
}

void SpeculationStudy::verify_cost_table() {
  Table t(fmt::format("What verifying costs: one target pass over γ+1 positions (all their logits) against one decode "
                      "step, at context {}, median of {} rounds (every pass timed once per round, in turn)",
                      costs_.context, std::max(7, s_.repeats)),
          {"γ", "positions in the pass", "pass time", "÷ decode step", "per position"});
  for (std::size_t g = 0; g < costs_.verify.size(); ++g) {
    const double v = costs_.verify[g];
    t.add_row({std::to_string(g), std::to_string(g + 1), format_seconds(v * costs_.decode_seconds), cell::times(v),
               cell::times(v / static_cast<double>(g + 1))});
    figures_["verify_cost"].push_back({{"gamma", g}, {"ratio_to_decode_step", v}});
  }
  t.add_note("γ = 0 is a plain decode step. The course assumes verification costs one pass (1.00×): a decode step "
             "is bound by reading the weights, and γ+1 rows reuse each weight while it is in the cache (the small-"
             "batch kernel in lib/tensor/small_matmul.cpp), so extra positions cost only their arithmetic.");
  t.emit(o_.csv_path);
}

Table draft_table(const std::string& title, int gamma, const Timed& plain, std::span<const DraftResult> drafts,
                  bool greedy) {
  std::vector<std::string> headers = {"draft", "MB / guess", "c", "α"};
  for (int i = 1; i <= gamma; ++i) headers.push_back(fmt::format("α at {}", i));
  for (const char* h : {"tokens / pass", "tokens/s", "speed-up", "predicted", "measured ÷ predicted",
                        "tokens = plain", "verdict"})
    headers.emplace_back(h);
  Table t(title, headers);
  // Plain decoding has only a speed; its other cells stay empty.
  t.add_row(NamedRow(headers)
                .set("draft", "none: plain decoding (chapter 03)")
                .set("tokens/s", fmt::format("{:.1f}", plain.tokens_per_second()))
                .set("speed-up", "1.00×")
                .cells());
  for (const DraftResult& d : drafts) {
    const SpeculativeStats& st = d.run.stats;
    const double speedup = plain.seconds / d.run.seconds;
    NamedRow row(headers);
    row.set("draft", d.name)
        .set("MB / guess", fmt::format("{:.1f}", d.bytes_per_guess / 1e6))
        .set("c", fmt::format("{:.3f}", d.c))
        .set("α", fmt::format("{:.3f}", st.alpha()));
    for (int i = 1; i <= gamma; ++i) row.set(fmt::format("α at {}", i), fmt::format("{:.2f}", st.alpha_at(i - 1)));
    row.set("tokens / pass", fmt::format("{:.2f}", st.tokens_per_round()))
        .set("tokens/s", fmt::format("{:.1f}", d.run.tokens_per_second()))
        .set("speed-up", cell::times(speedup))
        .set("predicted", cell::times(d.predicted))
        .set("measured ÷ predicted", fmt::format("{:.2f}", speedup / d.predicted))
        .set("tokens = plain", same_tokens(d.run, plain, greedy))
        .set("verdict", verdict(speedup));
    t.add_row(row.cells());
  }
  return t;
}

void SpeculationStudy::per_draft_table() {
  std::vector<Config> configs = {{nullptr, 0}};
  for (const MeasuredDraft& d : drafts_) configs.push_back({d.drafter.get(), s_.gamma});
  const std::vector<Timed> runs =
      time_configs(m_, configs, prompt_, o_.n_predict, o_.sampling, s_.repeats, "drafts");
  const Timed& plain = runs[0];
  std::vector<DraftResult> results;
  for (std::size_t i = 0; i < drafts_.size(); ++i) {
    MeasuredDraft& d = drafts_[i];
    const Timed& r = runs[i + 1];
    d.speedup = plain.seconds / r.seconds;
    const double predicted = predicted_for(r.stats, d.c, costs_);
    results.push_back({d.drafter->name(), d.bytes_per_guess, d.c, predicted, r});
    figures_["drafts"].push_back({{"draft", d.label}, {"name", d.drafter->name()}, {"bytes_per_guess", d.bytes_per_guess},
                                  {"c", d.c}, {"alpha", r.stats.alpha()}, {"tokens_per_pass", r.stats.tokens_per_round()},
                                  {"tokens_per_second", r.tokens_per_second()}, {"speedup", d.speedup},
                                  {"predicted_speedup", predicted}, {"identical_to_plain", r.tokens == plain.tokens}});
  }
  figures_["plain_tokens_per_second"] = plain.tokens_per_second();
  Table t = draft_table(fmt::format("Each draft at γ = {}: {} tokens after the {}-token prompt, median of {} runs",
                                    s_.gamma, o_.n_predict, prompt_.size(), s_.repeats),
                        s_.gamma, plain, results, o_.sampling.temperature == 0.0f);
  t.add_note(fmt::format("c: a guess's time ÷ a target decode step ({}), both measured at context {}. α: the share of "
                         "checked guesses accepted; \"α at i\": of guess i, when guesses 1 … i-1 were accepted.",
                         format_seconds(costs_.decode_seconds), costs_.context));
  t.add_note("predicted: E(α, γ̄) / (γ̄·c + v(γ̄)) with this run's α, the draft's c and the measured verification "
             "cost v; γ̄ = guesses per round. Prompt lookup guesses only when it finds a match: its rounds without "
             "one count as plain decode steps (speedup.hpp).");
  t.emit(o_.csv_path);
}

void SpeculationStudy::agreement_table() {
  if (!agreement_) {
    fmt::print("(α beside chapter 06's agreement: greedy runs on the CPU only; this run {})\n\n",
               o_.sampling.temperature != 0.0f ? "samples" : "is on " + m_.model.device().name());
    return;
  }
  std::vector<AgreementAlpha> rows;
  for (MeasuredDraft& d : drafts_) {
    if (d.flag == "lookup") continue;  // no model, nothing to agree
    fmt::print(stderr, "agreement and α of {} ...\n", d.drafter->name());
    rows.push_back(measure_agreement_alpha(m_, d.flag, *d.drafter, *agreement_, s_.gamma));
    const AgreementAlpha& r = rows.back();
    figures_["agreement_alpha"].push_back(
        {{"draft", d.label}, {"name", r.draft}, {"agreement", r.agreement.agreeing}, {"positions", r.agreement.positions},
         {"alpha_kept", r.alpha.agreeing}, {"alpha_checked", r.alpha.positions}, {"identical_to_fp32", r.same_tokens}});
  }
  if (rows.empty()) return;
  agreement_alpha_table(rows, s_.gamma, agreement_->positions(), agreement_->prompts.size()).emit(o_.csv_path);
}

std::vector<MeasuredDraft*> SpeculationStudy::swept_drafts() {
  // The fastest quantized draft and the fastest layer-skip draft (at γ of the per-draft table),
  // then prompt lookup and a draft file as they are. The target as its own draft is a check
  // (α = 1), not a candidate.
  MeasuredDraft *quantized = nullptr, *layers = nullptr;
  std::vector<MeasuredDraft*> out;
  for (MeasuredDraft& d : drafts_) {
    if (d.flag == "target") continue;
    const bool is_layers = d.flag.rfind("layers-", 0) == 0;
    if (!is_layers && !quant::parse_format_flag(d.flag)) {
      out.push_back(&d);
      continue;
    }
    MeasuredDraft*& best = is_layers ? layers : quantized;
    if (best == nullptr || d.speedup > best->speedup) best = &d;
  }
  if (layers != nullptr) out.insert(out.begin(), layers);
  if (quantized != nullptr) out.insert(out.begin(), quantized);
  return out;
}

void SpeculationStudy::gamma_sweep() {
  const std::vector<MeasuredDraft*> swept = swept_drafts();
  std::vector<Config> configs = {{nullptr, 0}};
  for (MeasuredDraft* d : swept)
    for (int g : s_.gammas) configs.push_back({d->drafter.get(), g});
  const std::vector<Timed> runs = time_configs(m_, configs, prompt_, o_.n_predict, o_.sampling, s_.repeats, "γ sweep");
  const Timed& plain = runs[0];
  Table t(fmt::format("γ sweep: the best draft of each kind, {} tokens, median of {} runs (plain decoding: {:.1f} tokens/s)",
                      o_.n_predict, s_.repeats, plain.tokens_per_second()),
          {"draft", "γ", "guesses / round", "α", "tokens / pass", "tokens/s", "speed-up", "predicted",
           "measured ÷ predicted", "verdict"});
  LinePlot plot("Speculative decoding: speed-up over plain decoding", "γ (guesses per round)", "speed-up (×)");
  std::size_t k = 1;
  int color = 0;  // a draft's measured and predicted curves: one colour, solid and dashed
  for (MeasuredDraft* d : swept) {
    std::vector<double> xs, measured, predicted;
    double best = 0;
    for (int g : s_.gammas) {
      const Timed& r = runs[k++];
      const double s = plain.seconds / r.seconds, p = predicted_for(r.stats, d->c, costs_);
      xs.push_back(g);
      measured.push_back(s);
      predicted.push_back(p);
      if (s > best) best = s, d->best_gamma = g;
      t.add_row({d->drafter->name(), std::to_string(g),
                 fmt::format("{:.2f}", static_cast<double>(r.stats.drafted) / static_cast<double>(std::max<int64_t>(1, r.stats.rounds))),
                 fmt::format("{:.3f}", r.stats.alpha()), fmt::format("{:.2f}", r.stats.tokens_per_round()),
                 fmt::format("{:.1f}", r.tokens_per_second()), cell::times(s), cell::times(p), fmt::format("{:.2f}", s / p), verdict(s)});
      figures_["gamma_sweep"].push_back({{"draft", d->label}, {"gamma", g}, {"alpha", r.stats.alpha()},
                                         {"tokens_per_pass", r.stats.tokens_per_round()},
                                         {"tokens_per_second", r.tokens_per_second()}, {"speedup", s},
                                         {"predicted_speedup", p}});
    }
    plot.add_series(d->drafter->name() + ": measured", xs, measured, {.color = color});
    plot.add_series(d->drafter->name() + ": predicted", xs, predicted, {.color = color++, .dashed = true});
  }
  plot.add_series("plain decoding", {static_cast<double>(s_.gammas.front()), static_cast<double>(s_.gammas.back())},
                  {1.0, 1.0}, {.reference = true});
  t.add_note("A longer guess pays only while α is high: guess i is reached with probability α^(i-1), but every "
             "guess costs c whether it is reached or not.");
  t.emit(o_.csv_path);
  if (!s_.plot_path.empty()) {
    plot.write(s_.plot_path);
    fmt::print("plot: {}\n\n", s_.plot_path);
  }
}

void SpeculationStudy::texts_table() {
  const std::vector<MeasuredDraft*> swept = swept_drafts();
  Table t(fmt::format("α by kind of text: {} tokens each, every draft at its best γ from the sweep", o_.n_predict),
          {"text", "draft", "γ", "α", "tokens / pass", "tokens/s", "speed-up", "verdict"});
  for (const TextKind& text : text_kinds(m_)) {
    std::vector<Config> configs = {{nullptr, 0}};
    for (MeasuredDraft* d : swept) configs.push_back({d->drafter.get(), std::max(1, d->best_gamma)});
    const std::vector<Timed> runs =
        time_configs(m_, configs, text.prompt, o_.n_predict, o_.sampling, s_.repeats, text.name);
    t.add_row({text.name, "none: plain decoding", "", "", "", fmt::format("{:.1f}", runs[0].tokens_per_second()), "1.00×", ""});
    for (std::size_t i = 0; i < swept.size(); ++i) {
      const Timed& r = runs[i + 1];
      const double s = runs[0].seconds / r.seconds;
      t.add_row({"", swept[i]->drafter->name(), std::to_string(configs[i + 1].gamma), fmt::format("{:.3f}", r.stats.alpha()),
                 fmt::format("{:.2f}", r.stats.tokens_per_round()), fmt::format("{:.1f}", r.tokens_per_second()), cell::times(s),
                 verdict(s)});
      figures_["texts"].push_back({{"text", text.name}, {"draft", swept[i]->label}, {"gamma", configs[i + 1].gamma},
                                   {"alpha", r.stats.alpha()}, {"speedup", s}});
    }
  }
  t.add_note("The same drafts, other traffic: α — and with it the speed-up — is a property of the text as much as "
             "of the draft. Prompt lookup costs nothing when it has no match and wins where the answer quotes the prompt.");
  t.emit(o_.csv_path);
}

}  // namespace infer::spec
