#include "quality_tables.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agreement.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "eval/evaluation.hpp"
#include "llm_int8.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "quantize_model.hpp"
#include "question_battery.hpp"
#include "smoothing.hpp"
#include "tensor/ops.hpp"  // num_threads
#include "w8a8.hpp"

namespace infer::quant {
namespace {

std::string fixed(double x, int digits) { return fmt::format("{:.{}f}", x, digits); }

// Perplexities span from ~20 to ~10^8: keep four significant digits without exponents.
std::string perplexity_text(double p) {
  if (!std::isfinite(p)) return "inf";
  if (p >= 1e5) return format_count(std::round(p));
  return fmt::format("{:.{}f}", p, p >= 1000 ? 0 : p >= 100 ? 1 : 2);
}

// A perplexity ratio: a percentage when close to 1, a factor when far from it.
std::string ratio_text(double r) {
  if (!std::isfinite(r)) return "inf";
  return r < 2 ? fmt::format("{:+.1f}%", 100 * (r - 1)) : r < 1e4 ? fmt::format("{:.1f}×", r) : fmt::format("{:.2g}×", r);
}

constexpr float kSmoothAlpha = 0.5f;  // SmoothQuant's migration strength (the paper's default for most models)
constexpr float kOutlierThreshold = 6.0f;  // LLM.int8's outlier magnitude (the paper's)

// Calibration text (SmoothQuant; AWQ and GPTQ in calibrated_int4.cpp): the last `n` tokens before
// the held-out slice (the end of Judges), so the scales never see the text they are evaluated on.
std::vector<int32_t> calibration_tokens(const Tokenizer& tok, const std::string& eval_text, int64_t n) {
  const std::string held = held_out_text(eval_text);
  const std::size_t before = eval_text.size() - held.size();
  const std::size_t chars = std::min<std::size_t>(before, n * 16);  // ample for n tokens
  std::vector<int32_t> t = tok.encode(eval_text.substr(before - chars, chars), /*parse_special=*/false);
  if (std::ssize(t) > n) t.erase(t.begin(), t.end() - n);
  return t;
}

}  // namespace

QualityBench quality_bench(LoadedModel& m, const QualityOptions& q) {
  QualityBench bench;
  const std::string eval_text = read_eval_text();
  bench.tokens = m.tokenizer.encode(held_out_text(eval_text), /*parse_special=*/false);
  if (q.eval_tokens > std::ssize(bench.tokens)) {
    fmt::print(stderr, "note: the held-out text has {} tokens; evaluating all of them\n", bench.tokens.size());
  } else {
    bench.tokens.resize(q.eval_tokens);
  }
  bench.questions = read_questions(questions_path());
  bench.reference = keep_reference(m.model);
  // The reference's greedy output, once.
  bench.greedy = greedy_reference(m.model, m.tokenizer, q.agree_tokens);  // agreement.hpp
  if (bench.greedy.positions() < 144)
    fmt::print(stderr, "note: the reference's greedy answers give only {} agreement positions (raise --agree-tokens)\n",
               bench.greedy.positions());
  bench.calibration = calibration_tokens(m.tokenizer, eval_text, q.calib_tokens);
  return bench;
}

std::vector<QualityResult> measure_quality(LoadedModel& m, const QualityBench& bench, const QualityOptions& q,
                                           const std::vector<QualityRow>& rows, bool penalized_battery) {
  const GreedyPenalty penalty{.repeat_penalty = q.battery_penalty, .repeat_last_n = 64};
  std::vector<QualityResult> results;
  for (const QualityRow& apply : rows) {
    Stopwatch clock;
    QualityResult r;
    r.info = apply();
    const EvalOptions eval{.window = q.window, .chunk = q.window, .progress_label = "perplexity, " + r.info.scheme};
    r.text = evaluate_text<GroupedKvCache>(m.model, bench.tokens, eval);
    r.battery = run_battery(m.model, m.tokenizer, bench.questions, q.answer_tokens);
    if (penalized_battery) r.battery_penalized = run_battery(m.model, m.tokenizer, bench.questions, q.answer_tokens, penalty);
    r.agree = greedy_agreement_with(m.model, bench.greedy);
    r.seconds = clock.seconds();
    results.push_back(std::move(r));
  }
  quantize_model(m.model, bench.reference, nullptr);  // leave the model as it came
  return results;
}

Table quality_table(std::string_view what, const std::vector<QualityResult>& results, const QualityBench& bench,
                    const QualityOptions& q, const std::vector<QualityColumn>& extra, nlohmann::json& figures) {
  const TextEvaluation& base = results.at(0).text;
  const GreedyReference& greedy = bench.greedy;
  const int64_t n_q = std::ssize(bench.questions);
  std::vector<std::string> headers = {"scheme", "bits/weight", "weights"};
  for (const QualityColumn& c : extra) headers.push_back(c.header);
  headers.insert(headers.end(), {"perplexity", "Δ vs fp32", "battery", "battery 95% CI", "agreement", "agreement 95% CI",
                                 "top-1 same as fp32 on text", "time"});
  Table table(fmt::format("{} ({} perplexity positions of held-out text in {} windows of ≤ {}; {} questions; {} agreement "
                          "positions)",
                          what, base.count(), base.windows, q.window, n_q, greedy.positions()),
              headers);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const QualityResult& r = results[i];
    const Interval bi = wilson_interval(r.battery.score(), r.battery.size());
    const Interval ai = wilson_interval(r.agree.agreeing, r.agree.positions);
    const Agreement text_agree = greedy_agreement(base, r.text);
    const double ppl = r.text.perplexity();
    std::vector<std::string> row = {r.info.scheme, fixed(r.info.bits_per_weight(), 3), format_bytes(r.info.packed_bytes)};
    for (const QualityColumn& c : extra) row.push_back(c.cells.at(i));
    row.insert(row.end(), {perplexity_text(ppl), i == 0 ? "" : ratio_text(ppl / base.perplexity()),
                           fmt::format("{}/{}", r.battery.score(), r.battery.size()),
                           fmt::format("{:.2f}–{:.2f}", bi.lo, bi.hi),
                           fmt::format("{}/{}", r.agree.agreeing, r.agree.positions),
                           fmt::format("{:.2f}–{:.2f}", ai.lo, ai.hi), cell::percent(text_agree.rate()),
                           format_seconds(r.seconds)});
    table.add_row(std::move(row));
    nlohmann::json record = {{"scheme", r.info.scheme}, {"bits_per_weight", r.info.bits_per_weight()},
                             {"packed_bytes", r.info.packed_bytes}, {"embedding_error", r.info.embedding_error},
                             {"perplexity", ppl}, {"mean_nll", r.text.mean_nll()}, {"positions", r.text.count()},
                             {"battery_correct", r.battery.score()}, {"battery_size", r.battery.size()},
                             {"battery_ci", {bi.lo, bi.hi}}, {"battery_correct_per_question", r.battery.correct},
                             {"agreement", r.agree.agreeing}, {"agreement_positions", r.agree.positions},
                             {"agreement_ci", {ai.lo, ai.hi}}, {"text_top1_agreement", text_agree.rate()},
                             {"seconds", r.seconds}};
    if (!r.battery_penalized.correct.empty()) {
      record["battery_penalized_correct"] = r.battery_penalized.score();
      record["battery_penalized_correct_per_question"] = r.battery_penalized.correct;
    }
    for (const QualityColumn& c : extra) record[c.header] = c.cells.at(i);
    figures.push_back(std::move(record));
  }
  // What the battery can distinguish: how many questions below the reference's score a model must
  // fall before the two 95% intervals stop overlapping.
  const int64_t k0 = results[0].battery.score();
  int64_t gap = 1;
  while (k0 - gap >= 0 && wilson_interval(k0 - gap, n_q).hi >= wilson_interval(k0, n_q).lo) ++gap;
  table.add_note(fmt::format("weights: the packed size of every quantized matrix (the 210 projections and the tied "
                             "embedding/output matrix, counted once); bits/weight over the same. Norms stay fp32."));
  table.add_note("fp32 is the shipped file dequantized (projections Q4_1, embedding/output Q8_0), not the original bf16 "
                 "model: Q4_1 reproduces the projections exactly, so its whole cost here is the embedding/output matrix "
                 "moved from Q8_0 to Q4_1; Q8_0 reproduces that matrix and rounds only the projections.");
  table.add_note(fmt::format("Battery: greedy answers under the chat template, no repetition penalty; 95% Wilson "
                             "intervals. With {} questions the reference's {}/{} is only distinguishable from a model "
                             "that scores {} fewer (intervals stop overlapping): a difference of one or two questions "
                             "is noise.", n_q, k0, n_q, k0 - gap >= 0 ? std::to_string(gap) : "(no score)"));
  table.add_note(fmt::format("Agreement: at each of the {} positions of the fp32 model's greedy answers to {} prompts, "
                             "the quantized model's top token given the same prefix (fp32 against itself checks the "
                             "method: batched prefill vs decode). Text column: the same question on the held-out text.",
                             greedy.positions(), greedy.prompts.size()));
  return table;
}

void quality_tables(LoadedModel& m, const CommonOptions& o, const QualityOptions& q, nlohmann::json& figures) {
  Llama& model = m.model;
  const QualityBench bench = quality_bench(m, q);
  const ReferenceWeights& reference = bench.reference;
  const std::vector<Question>& questions = bench.questions;

  // The rows: fp32, every weight-only scheme, then 8-bit activations too (W8A8), without and with
  // SmoothQuant's scales (calibrated once, on the reference model), and with LLM.int8's outlier
  // columns in fp32 (llm_int8.hpp).
  const auto schemes = table_schemes();
  std::vector<QualityRow> rows = {[&] { return quantize_model(model, reference, nullptr); }};
  for (const auto& s : schemes) rows.push_back([&, scheme = s.get()] { return quantize_model(model, reference, scheme); });
  const InputMaxima maxima = calibrate_input_maxima(model, reference, bench.calibration);
  const std::vector<std::vector<float>> smoothing = smoothing_factors(maxima, reference, kSmoothAlpha);
  rows.push_back([&] { return quantize_model_w8a8(model, reference, {}, "W8A8"); });
  rows.push_back([&] { return quantize_model_w8a8(model, reference, smoothing, "W8A8 SmoothQuant"); });
  std::vector<OutlierCounts> outliers, outliers_int8;  // what LLM.int8's layers flag, filled by their runs
  rows.push_back([&] {
    return quantize_model_llm_int8(model, reference, kOutlierThreshold, OutlierWeights::original, outliers,
                                   "W8A8 LLM.int8");
  });
  rows.push_back([&] {
    return quantize_model_llm_int8(model, reference, kOutlierThreshold, OutlierWeights::int8, outliers_int8,
                                   "W8A8 LLM.int8 (INT8 W)");
  });

  Stopwatch total;
  const std::vector<QualityResult> results = measure_quality(m, bench, q, rows, /*penalized_battery=*/true);
  const double seconds = total.seconds();
  const int64_t n_q = std::ssize(questions);
  Table table = quality_table("Quality of the model with its weights quantized in place", results, bench, q, {},
                              figures["quality"]);
  table.add_note(fmt::format("W8A8: every projection's input rounded to int8 per token (scale max|x|/127) and its "
                             "weights INT8 per-row, multiplied in fp32 (simulated); the embedding/output matrix INT8 "
                             "per-row, weights only. SmoothQuant: x/s and W·s with s = max|X|^{0}/max|W|^{1}, max|X| from "
                             "one pass over the {2} tokens before the held-out text.",
                             kSmoothAlpha, 1 - kSmoothAlpha, maxima.tokens));
  table.add_note(fmt::format("LLM.int8: at each call the input columns with |x| ≥ {:g} in any row are multiplied in "
                             "fp32 by W's own columns (kept whole beside the INT8 copy: the row's weights), the rest as "
                             "in W8A8, their step no longer set by the outliers; (INT8 W): the same columns multiplied "
                             "by Ŵ's, nothing stored beyond INT8. What was flagged: the next table.",
                             kOutlierThreshold));
  table.add_note(fmt::format("Computed in {:.1f} min on {} threads.", seconds / 60, num_threads()));
  table.emit(o.csv_path);
  outlier_column_table(outliers, kOutlierThreshold, maxima, {4.0f, 6.0f, 8.0f}, figures).emit(o.csv_path);

  // The battery again with the repetition penalty: how much of its ranking is decoding, not weights.
  Table pen(fmt::format("Question battery without and with a repetition penalty of {:g} (llama.cpp's, last 64 tokens, "
                        "prompt included)", q.battery_penalty),
            {"scheme", "battery, no penalty", fmt::format("battery, penalty {:g}", q.battery_penalty), "change",
             "answers that differ", "questions flipped"});
  for (const QualityResult& r : results) {
    int64_t differ = 0, flipped = 0;
    for (std::size_t i = 0; i < questions.size(); ++i) {
      differ += r.battery.replies[i] != r.battery_penalized.replies[i] ? 1 : 0;
      flipped += r.battery.correct[i] != r.battery_penalized.correct[i] ? 1 : 0;
    }
    pen.add_row({r.info.scheme, fmt::format("{}/{}", r.battery.score(), n_q),
                 fmt::format("{}/{}", r.battery_penalized.score(), n_q),
                 fmt::format("{:+d}", r.battery_penalized.score() - r.battery.score()),
                 fmt::format("{} of {}", differ, n_q), fmt::format("{} of {}", flipped, n_q)});
  }
  auto score_of = [&](const std::string& name, bool penalized) -> std::optional<int64_t> {
    for (const QualityResult& r : results)
      if (r.info.scheme == name) return penalized ? r.battery_penalized.score() : r.battery.score();
    return std::nullopt;
  };
  if (const auto a0 = score_of("NF4", false), b0 = score_of("INT4 g128", false), a1 = score_of("NF4", true),
      b1 = score_of("INT4 g128", true);
      a0 && b0 && a1 && b1) {
    auto order = [](int64_t a, int64_t b) { return a > b ? "NF4 ahead" : a < b ? "INT4 g128 ahead" : "tied"; };
    pen.add_note(fmt::format("NF4 vs INT4 g128: {} vs {} without the penalty ({}), {} vs {} with it ({}): {}.", *a0, *b0,
                             order(*a0, *b0), *a1, *b1, order(*a1, *b1),
                             (*a0 > *b0) != (*a1 > *b1) || (*a0 == *b0) != (*a1 == *b1) ? "the order changes"
                                                                                         : "the order holds"));
    figures["battery_penalty"] = {{"penalty", q.battery_penalty}, {"nf4", {*a0, *a1}}, {"int4_g128", {*b0, *b1}}};
  }
  pen.add_note("A flipped question is one answered correctly in one setting and not in the other: the penalty changes "
               "the decoding, not the weights.");
  pen.emit(o.csv_path);

  // Per question: which models got it right.
  std::vector<std::string> headers = {"question", "fp32 answer"};
  for (const QualityResult& r : results) headers.push_back(r.info.scheme);
  Table per_q("Question battery: the fp32 answer and who answered correctly (+) or not (.)", headers);
  for (std::size_t i = 0; i < questions.size(); ++i) {
    std::string answer = results[0].battery.replies[i];
    std::replace(answer.begin(), answer.end(), '\n', ' ');
    if (answer.size() > 40) answer = answer.substr(0, 37) + "...";
    std::vector<std::string> row = {questions[i].question, answer};
    for (const QualityResult& r : results) row.push_back(r.battery.correct[i] ? "+" : ".");
    per_q.add_row(row);
  }
  per_q.emit(o.csv_path);
}

void add_quality_options(CLI::App& app, QualityOptions& q) {
  app.add_option("--eval-tokens", q.eval_tokens, "tokens of held-out text for perplexity")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--window", q.window, "tokens per perplexity window (each starts with an empty cache)")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--agree-tokens", q.agree_tokens, "greedy tokens per agreement prompt (3 prompts)")
      ->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--answer-tokens", q.answer_tokens, "greedy tokens per battery answer")
      ->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--battery-penalty", q.battery_penalty, "repetition penalty of the battery's second run (1.1: the "
                 "course model's own)")->check(real_number(0, 100, /*min_exclusive=*/true))->capture_default_str();
  app.add_option("--calib-tokens", q.calib_tokens, "calibration tokens, the text before the held-out slice (SmoothQuant; "
                 "with --calibrated AWQ and GPTQ)")->check(whole_number(1, 8192))->capture_default_str();
}

}  // namespace infer::quant
