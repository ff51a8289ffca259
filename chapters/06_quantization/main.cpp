// ch06_quantization — weight quantization schemes and what they cost in quality.
//
//   ch06_quantization                      every table: weight error, activation outliers, quality
//   ch06_quantization --eval-tokens 4096   perplexity over more of the held-out text
//   ch06_quantization --no-quality         only the weight and activation tables (no text needed)
//   ch06_quantization --csv out.csv --json out.json
//   ch06_quantization --quant nf4 -p "..." -n 64   part 2: generate through the packed kernels
//   ch06_quantization --speed -t 2                 part 2: the speed table of the kernels
//   ch06_quantization --memory                     part 2: what fits on 8/16/24 GB cards and in this RAM
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "activation_outliers.hpp"
#include "agreement.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "app/text_streamer.hpp"
#include "cached_generate.hpp"
#include "evaluation.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "kernel_speed.hpp"
#include "measure/bandwidth.hpp"
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "memory_budget.hpp"
#include "quant_scheme.hpp"
#include "quantize_model.hpp"
#include "question_battery.hpp"
#include "smoothing.hpp"
#include "tensor/ops.hpp"
#include "w8a8.hpp"
#include "weight_error.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

std::string fixed(double x, int digits) { return fmt::format("{:.{}f}", x, digits); }
// An error: fixed digits, or two significant digits when it would print as 0.0000.
std::string error_text(double e) { return e > 0 && e < 5e-5 ? fmt::format("{:.1e}", e) : fixed(e, 4); }
std::string percent(double fraction, int digits = 1) { return fmt::format("{:.{}f}%", 100.0 * fraction, digits); }

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

void emit(const Table& t, const CommonOptions& o) {
  t.print();
  t.append_csv(o.csv_path);
}

// --- 1. the weight error of every scheme on every projection matrix ---

void weight_error_tables(const Llama& model, const CommonOptions& o, nlohmann::json& figures) {
  const std::vector<NamedMatrix> matrices = projection_matrices(model.weights());
  const auto schemes = table_schemes();
  Stopwatch clock;
  const std::vector<SchemeErrors> errors = weight_errors(matrices, schemes, "weight error");
  const double seconds = clock.seconds();

  int64_t params = 0;
  for (const NamedMatrix& m : matrices) params += m.weight.numel();
  Table table(fmt::format("Weight error: relative error ‖W − Ŵ‖/‖W‖ over all {} projection matrices ({} weights)",
                          matrices.size(), format_count(static_cast<double>(params))),
              {"scheme", "bits/weight", "mean error", "worst error", "worst matrix", "shape"});
  for (const SchemeErrors& e : errors) {
    const NamedMatrix& worst = matrices[e.worst()];
    const bool exact = e.errors[e.worst()] == 0;
    table.add_row({e.scheme, fixed(e.bits_per_weight(), 3), error_text(e.mean()), error_text(e.errors[e.worst()]),
                   exact ? "(every matrix exact)" : worst.name, exact ? "" : shape_string(worst.weight.shape())});
    figures["weight_error"].push_back({{"scheme", e.scheme}, {"bits_per_weight", e.bits_per_weight()},
                                       {"mean", e.mean()}, {"worst", e.errors[e.worst()]}, {"worst_matrix", worst.name},
                                       {"errors", e.errors}});
  }
  table.add_note("bits/weight = 8 × packed bytes / weights, scales included (16-bit scales: INT4 g128 = 4 + 16/128; "
                 "with an 8-bit zero point per group, asym = 4 + 24/128). fp16, bf16, fp8: each weight rounded to the "
                 "nearest value of the format (ties to even), no scale; NF4 b128: NF4's levels in INT4 g128's blocks.");
  table.add_note("W is the model file's weights dequantized to fp32 — and the file ships them as Q4_1, so re-quantizing "
                 "to Q4_1 recovers them almost exactly: its error here is flattered, not a fair 5-bit figure.");
  table.add_note(fmt::format("Computed in {} on {} threads.", format_seconds(seconds), num_threads()));
  emit(table, o);

  // The outlier statistics of the matrix that INT4 per-tensor treats worst, beside the one it treats best.
  const SchemeErrors& int4 = *std::find_if(errors.begin(), errors.end(), [](const SchemeErrors& e) { return e.scheme == "INT4 per-tensor"; });
  const std::size_t worst = int4.worst();
  const std::size_t best = static_cast<std::size_t>(std::min_element(int4.errors.begin(), int4.errors.end()) - int4.errors.begin());
  Table stats(fmt::format("Outlier statistics: the matrix with the largest and the smallest {} error", int4.scheme),
              {"matrix", "shape", int4.scheme + " error", "mean |w|", "std", "max |w|", "max/std", "beyond 6σ", "share"});
  for (std::size_t i : {worst, best}) {
    const NamedMatrix& m = matrices[i];
    const OutlierStats s = outlier_stats({m.weight.host<float>(), static_cast<std::size_t>(m.weight.numel())});
    stats.add_row({m.name, shape_string(m.weight.shape()), fixed(int4.errors[i], 4), fmt::format("{:.5f}", s.mean_abs),
                   fmt::format("{:.5f}", s.std), fmt::format("{:.5f}", s.max_abs), fixed(s.max_over_std, 1),
                   fmt::format("{} of {}", format_count(static_cast<double>(s.beyond_6_sigma)), format_count(static_cast<double>(s.count))),
                   fmt::format("{:.3f}%", 100 * s.beyond_6_sigma_fraction())});
    figures["outlier_stats"].push_back({{"matrix", m.name}, {"int4_per_tensor_error", int4.errors[i]},
                                        {"mean_abs", s.mean_abs}, {"std", s.std}, {"max_abs", s.max_abs},
                                        {"max_over_std", s.max_over_std}, {"beyond_6_sigma", s.beyond_6_sigma},
                                        {"count", s.count}});
  }
  stats.add_note("One scale per tensor is set by max |w|: the step is max|w|/7 for INT4, so in a matrix whose largest "
                 "weight is many σ out most weights round to the zero level or its two neighbours.");
  emit(stats, o);
}

// --- 2. outlier features in the residual stream ---

constexpr const char* kOutlierPrompt =
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk. He trimmed the wick, polished the "
    "great lens and wound the clockwork that turned the light. Ships passing the rocky headland counted the flashes "
    "to know where they were. One winter night a storm tore the shutters from the windows, but the keeper stayed at "
    "his post until morning, and the light never went out.";

void activation_tables(Llama& model, const Tokenizer& tokenizer, const CommonOptions& o, nlohmann::json& figures) {
  const std::vector<int32_t> tokens = tokenizer.encode(kOutlierPrompt, false);
  const ResidualCapture cap = capture_residual_stream(model, tokens);
  // The capture repeats Llama::forward step by step: check that it computed the same thing.
  double max_diff = 0;
  {
    GroupedKvCache cache(model.config(), static_cast<int64_t>(tokens.size()), model.device());
    const std::vector<float> logits = model.forward(tokens, 0, cache).to_vector();
    for (std::size_t i = 0; i < logits.size(); ++i)
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(logits[i] - cap.last_logits[i])));
    if (max_diff > 1e-3) throw std::runtime_error(fmt::format("the residual capture disagrees with Llama::forward ({:g})", max_diff));
  }
  const auto& c = model.config();
  const int64_t d = cap.d, N = cap.tokens;

  // Position 0 is special: with nothing before it to attend to, the model parks enormous values
  // there (an "attention sink"). The right-hand columns leave it out.
  std::vector<std::vector<float>> dim_max, dim_max_rest;
  for (const auto& x : cap.layers) {
    dim_max.push_back(per_dim_max(x, N, d));
    dim_max_rest.push_back(per_dim_max(x, N, d, 1));
  }

  Table table(fmt::format("Activation outliers: per-dimension max |x| of the residual stream after each layer "
                          "({}-token prompt, {} dimensions)", N, d),
              {"layer", "largest dim", "max |x|", "2nd", "3rd", "4th", "median dim", "largest / median",
               "without position 0: largest", "median", "largest / median"});
  std::vector<int> top1_count(static_cast<std::size_t>(d), 0);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& m = dim_max[static_cast<std::size_t>(l)];
    const std::vector<int> top = top_dims(m, 4);
    const double med = median_of(m);
    const auto& m_rest = dim_max_rest[static_cast<std::size_t>(l)];
    const int top_rest = top_dims(m_rest, 1)[0];
    const double med_rest = median_of(m_rest);
    auto cell = [&](int i) { return fmt::format("{} ({:.1f})", top[static_cast<std::size_t>(i)], m[static_cast<std::size_t>(top[static_cast<std::size_t>(i)])]); };
    table.add_row({std::to_string(l), std::to_string(top[0]), fixed(m[static_cast<std::size_t>(top[0])], 1), cell(1), cell(2),
                   cell(3), fixed(med, 2), fmt::format("{:.0f}×", m[static_cast<std::size_t>(top[0])] / med),
                   fmt::format("{} ({:.1f})", top_rest, m_rest[static_cast<std::size_t>(top_rest)]), fixed(med_rest, 2),
                   fmt::format("{:.0f}×", m_rest[static_cast<std::size_t>(top_rest)] / med_rest)});
    top1_count[static_cast<std::size_t>(top[0])] += 1;
    std::vector<int> top_list(top.begin(), top.end());
    figures["activation_outliers"].push_back({{"layer", l}, {"top_dims", top_list},
                                              {"top_values", {m[static_cast<std::size_t>(top[0])], m[static_cast<std::size_t>(top[1])],
                                                              m[static_cast<std::size_t>(top[2])], m[static_cast<std::size_t>(top[3])]}},
                                              {"median", med}, {"top_dim_without_position_0", top_rest},
                                              {"top_value_without_position_0", m_rest[static_cast<std::size_t>(top_rest)]},
                                              {"median_without_position_0", med_rest}});
  }
  const auto most = static_cast<int>(std::max_element(top1_count.begin(), top1_count.end()) - top1_count.begin());
  // Which dimensions are among the top 4 at most layers?
  std::vector<int> in_top4(static_cast<std::size_t>(d), 0);
  for (const auto& m : dim_max)
    for (int dim : top_dims(m, 4)) in_top4[static_cast<std::size_t>(dim)] += 1;
  std::string persistent;
  for (int dim : top_dims(std::vector<float>(in_top4.begin(), in_top4.end()), 4))
    persistent += fmt::format("{}{} ({} of {} layers)", persistent.empty() ? "" : ", ", dim, in_top4[static_cast<std::size_t>(dim)], c.n_layers);
  table.add_note(fmt::format("Dimension {} is the largest at {} of {} layers. In the top 4 most often: {}.", most,
                             top1_count[static_cast<std::size_t>(most)], c.n_layers, persistent));
  table.add_note("Position 0 (the first token) has nothing before it to attend to, and the model parks very large "
                 "values there (an \"attention sink\"); the last three columns leave it out. The outlier dimensions "
                 "are the same either way.");
  emit(table, o);
  figures["activation_persistence"] = {{"most_frequent_top_dim", most}, {"layers_as_top", top1_count[static_cast<std::size_t>(most)]}};

  // Histogram at the middle layer, in powers of two.
  const int mid = c.n_layers / 2;
  const auto& m = dim_max[static_cast<std::size_t>(mid)];
  const std::vector<Log2Bin> bins = log2_histogram(m);
  int64_t most_in_bin = 1;
  for (const Log2Bin& b : bins) most_in_bin = std::max(most_in_bin, b.count);
  fmt::print("Histogram of the {} per-dimension maxima at layer {} (bins of powers of two, # ∝ count):\n", d, mid);
  for (const Log2Bin& b : bins) {
    const int width = b.count == 0 ? 0 : std::max<int>(1, static_cast<int>(std::lround(40.0 * static_cast<double>(b.count) / static_cast<double>(most_in_bin))));
    fmt::print("  {:>6g} - {:>6g} | {:<40} {}\n", b.lo, b.hi, std::string(static_cast<std::size_t>(width), '#'), b.count);
    figures["activation_histogram"].push_back({{"lo", b.lo}, {"hi", b.hi}, {"count", b.count}});
  }
  fmt::print("\n");

  // INT8 with one scale for the whole layer-`mid` tensor, then without the 4 largest dimensions.
  const auto& x = cap.layers[static_cast<std::size_t>(mid)];
  const std::vector<int> top4 = top_dims(m, 4);
  std::vector<float> magnitudes;
  for (float v : x) magnitudes.push_back(std::fabs(v));
  // A few ordinary dimensions: the ones whose max sits at the 90th, 50th and 10th percentile.
  std::vector<int> order(static_cast<std::size_t>(d));
  for (int i = 0; i < d; ++i) order[static_cast<std::size_t>(i)] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return m[static_cast<std::size_t>(a)] < m[static_cast<std::size_t>(b)]; });
  const std::vector<int> dims = {order[static_cast<std::size_t>(d * 9 / 10)], order[static_cast<std::size_t>(d / 2)],
                                 order[static_cast<std::size_t>(d / 10)]};
  const Int8TensorScale all = int8_tensor_scale(x, N, d, {}, dims);
  const Int8TensorScale rest = int8_tensor_scale(x, N, d, top4, dims);
  const Int8TensorScale later = int8_tensor_scale(x, N, d, {}, dims, 1);
  Table q(fmt::format("INT8 with one tensor-wide scale on the layer-{} residual stream ({} tokens × {} dims; median |x| "
                      "{:.2f}, 99th percentile {:.2f})", mid, N, d, median_of(magnitudes), percentile(std::vector<double>(magnitudes.begin(), magnitudes.end()), 99)),
          {"scale from", "step (scale)", "levels used, whole tensor", fmt::format("dim {} (max {:.2f})", dims[0], m[static_cast<std::size_t>(dims[0])]),
           fmt::format("dim {} (max {:.2f})", dims[1], m[static_cast<std::size_t>(dims[1])]),
           fmt::format("dim {} (max {:.2f})", dims[2], m[static_cast<std::size_t>(dims[2])])});
  auto levels = [](int64_t n) { return fmt::format("{} of 256", n); };
  q.add_row({"all dimensions", fmt::format("{:.4f}", all.scale), levels(all.levels_used), levels(all.distinct_levels[0]),
             levels(all.distinct_levels[1]), levels(all.distinct_levels[2])});
  q.add_row({fmt::format("without dims {}, {}, {}, {}", top4[0], top4[1], top4[2], top4[3]), fmt::format("{:.4f}", rest.scale),
             levels(rest.levels_used), levels(rest.distinct_levels[0]), levels(rest.distinct_levels[1]),
             levels(rest.distinct_levels[2])});
  q.add_row({"all dimensions, position 0 left out", fmt::format("{:.4f}", later.scale), levels(later.levels_used),
             levels(later.distinct_levels[0]), levels(later.distinct_levels[1]), levels(later.distinct_levels[2])});
  q.add_note(fmt::format("scale = max |x| / 127; levels = distinct round(x / scale) over the tokens. Excluding the top 4 "
                         "dimensions makes the step {:.0f}× smaller. The three dimensions are those whose max sits at "
                         "the 90th, 50th and 10th percentile of the {} dimensions.", all.scale / rest.scale, d));
  q.add_note(fmt::format("The capture runs the layers with lib's operations (no hook in Llama::forward); its last-token "
                         "logits differ from Llama::forward's by at most {:.2g}.", max_diff));
  emit(q, o);
  figures["activation_int8"] = {{"layer", mid}, {"dims", dims}, {"scale_all", all.scale}, {"levels_all", all.levels_used},
                                {"dim_levels_all", all.distinct_levels}, {"excluded", top4}, {"scale_rest", rest.scale},
                                {"levels_rest", rest.levels_used}, {"dim_levels_rest", rest.distinct_levels},
                                {"scale_without_position_0", later.scale}, {"levels_without_position_0", later.levels_used},
                                {"dim_levels_without_position_0", later.distinct_levels}};
}

// --- 3. quality: perplexity, question battery, agreement, for the model quantized by each scheme ---

// Prompts whose fp32 greedy answers are the agreement positions: 3 × 48 = 144 when no answer
// ends early (these three do not, at the default --agree-tokens).
const std::vector<std::string> kAgreementPrompts = {
    "Write a short story about a cat who learns to swim.",
    "Explain how a bicycle works to a ten-year-old.",
    "Describe a busy market on a Saturday morning.",
};

struct QualityOptions {
  int64_t eval_tokens = 2048;
  int64_t window = 512;
  int agree_tokens = 48;    // greedy tokens per agreement prompt
  int answer_tokens = 24;   // greedy tokens per battery answer
  // The battery's second run: the repetition penalty the course's model ships with (its
  // generation_config.json: 1.1), over llama.cpp's default window of 64 tokens.
  float battery_penalty = 1.1f;
  int64_t calib_tokens = 512;  // SmoothQuant's calibration pass: the end of the text before the held-out slice
};

constexpr float kSmoothAlpha = 0.5f;  // SmoothQuant's migration strength (the paper's default for most models)

// Calibration text for SmoothQuant: the last `n` tokens before the held-out slice (the end of
// Judges), so the scales never see the text they are evaluated on.
std::vector<int32_t> calibration_tokens(const Tokenizer& tok, const std::string& eval_text, int64_t n) {
  const std::string held = held_out_text(eval_text);
  const std::size_t before = eval_text.size() - held.size();
  const std::size_t chars = std::min<std::size_t>(before, static_cast<std::size_t>(n) * 16);  // ample for n tokens
  std::vector<int32_t> t = tok.encode(eval_text.substr(before - chars, chars), /*parse_special=*/false);
  if (static_cast<int64_t>(t.size()) > n) t.erase(t.begin(), t.end() - n);
  return t;
}

void quality_tables(LoadedModel& m, const CommonOptions& o, const QualityOptions& q, nlohmann::json& figures) {
  Llama& model = m.model;
  const Tokenizer& tok = m.tokenizer;
  const std::string eval_text = read_eval_text();
  std::vector<int32_t> tokens = tok.encode(held_out_text(eval_text), /*parse_special=*/false);
  if (q.eval_tokens > static_cast<int64_t>(tokens.size())) {
    fmt::print(stderr, "note: the held-out text has {} tokens; evaluating all of them\n", tokens.size());
  } else {
    tokens.resize(static_cast<std::size_t>(q.eval_tokens));
  }
  const std::vector<Question> questions = read_questions(questions_path());
  const ReferenceWeights reference = keep_reference(model);

  // The reference's greedy output, once.
  GreedyReference greedy;
  for (const std::string& p : kAgreementPrompts) greedy.prompts.push_back(chat_prompt(tok, p));
  greedy.continuations = greedy_batch(model, tok, greedy.prompts, q.agree_tokens, /*stop_at_end=*/true);
  if (greedy.positions() < 144)
    fmt::print(stderr, "note: the reference's greedy answers give only {} agreement positions (raise --agree-tokens)\n",
               greedy.positions());

  // The rows: fp32, every weight-only scheme, then 8-bit activations too (W8A8), without and with
  // SmoothQuant's scales (calibrated once, on the reference model).
  const auto schemes = table_schemes();
  std::vector<std::function<QuantizedModel()>> rows = {[&] { return quantize_model(model, reference, nullptr); }};
  for (const auto& s : schemes) rows.push_back([&, scheme = s.get()] { return quantize_model(model, reference, scheme); });
  const std::vector<int32_t> calibration = calibration_tokens(tok, eval_text, q.calib_tokens);
  const InputMaxima maxima = calibrate_input_maxima(model, reference, calibration);
  const std::vector<std::vector<float>> smoothing = smoothing_factors(maxima, reference, kSmoothAlpha);
  rows.push_back([&] { return quantize_model_w8a8(model, reference, {}, "W8A8"); });
  rows.push_back([&] { return quantize_model_w8a8(model, reference, smoothing, "W8A8 SmoothQuant"); });
  const GreedyPenalty penalty{.repeat_penalty = q.battery_penalty, .repeat_last_n = 64};

  struct Result {
    QuantizedModel info;
    TextEvaluation text;
    BatteryResult battery, battery_penalized;
    AgreementCount agree;
    double seconds = 0;
  };
  std::vector<Result> results;
  Stopwatch total;
  for (const auto& apply : rows) {
    Stopwatch clock;
    Result r;
    r.info = apply();
    const EvalOptions eval{.window = q.window, .chunk = q.window, .progress_label = "perplexity, " + r.info.scheme};
    r.text = evaluate_text(model, tokens, eval);
    r.battery = run_battery(model, tok, questions, q.answer_tokens);
    r.battery_penalized = run_battery(model, tok, questions, q.answer_tokens, penalty);
    r.agree = greedy_agreement_with(model, greedy);
    r.seconds = clock.seconds();
    results.push_back(std::move(r));
  }
  quantize_model(model, reference, nullptr);  // leave the model as it came
  const double seconds = total.seconds();

  const TextEvaluation& base = results[0].text;
  const int64_t n_q = static_cast<int64_t>(questions.size());
  Table table(fmt::format("Quality of the model with its weights quantized in place ({} perplexity positions of held-out "
                          "text in {} windows of ≤ {}; {} questions; {} agreement positions)",
                          base.count(), base.windows, q.window, n_q, greedy.positions()),
              {"scheme", "bits/weight", "weights", "perplexity", "Δ vs fp32", "battery", "battery 95% CI",
               "agreement", "agreement 95% CI", "top-1 same as fp32 on text", "time"});
  for (const Result& r : results) {
    const Interval bi = wilson_interval(r.battery.score(), r.battery.size());
    const Interval ai = wilson_interval(r.agree.agreeing, r.agree.positions);
    const Agreement text_agree = greedy_agreement(base, r.text);
    const double ppl = r.text.perplexity();
    table.add_row({r.info.scheme, fixed(r.info.bits_per_weight(), 3), format_bytes(static_cast<double>(r.info.packed_bytes)),
                   perplexity_text(ppl),
                   r.info.scheme == "fp32" ? "" : ratio_text(ppl / base.perplexity()),
                   fmt::format("{}/{}", r.battery.score(), r.battery.size()), fmt::format("{:.2f}–{:.2f}", bi.lo, bi.hi),
                   fmt::format("{}/{}", r.agree.agreeing, r.agree.positions), fmt::format("{:.2f}–{:.2f}", ai.lo, ai.hi),
                   percent(text_agree.rate()), format_seconds(r.seconds)});
    figures["quality"].push_back({{"scheme", r.info.scheme}, {"bits_per_weight", r.info.bits_per_weight()},
                                  {"packed_bytes", r.info.packed_bytes}, {"embedding_error", r.info.embedding_error},
                                  {"perplexity", ppl}, {"mean_nll", r.text.mean_nll()}, {"positions", r.text.count()},
                                  {"battery_correct", r.battery.score()}, {"battery_size", r.battery.size()},
                                  {"battery_ci", {bi.lo, bi.hi}}, {"battery_correct_per_question", r.battery.correct},
                                  {"battery_penalized_correct", r.battery_penalized.score()},
                                  {"battery_penalized_correct_per_question", r.battery_penalized.correct},
                                  {"agreement", r.agree.agreeing}, {"agreement_positions", r.agree.positions},
                                  {"agreement_ci", {ai.lo, ai.hi}}, {"text_top1_agreement", text_agree.rate()},
                                  {"seconds", r.seconds}});
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
  table.add_note(fmt::format("W8A8: every projection's input rounded to int8 per token (scale max|x|/127) and its "
                             "weights INT8 per-row, multiplied in fp32 (simulated); the embedding/output matrix INT8 "
                             "per-row, weights only. SmoothQuant: x/s and W·s with s = max|X|^{0}/max|W|^{1}, max|X| from "
                             "one pass over the {2} tokens before the held-out text.",
                             kSmoothAlpha, 1 - kSmoothAlpha, maxima.tokens));
  table.add_note(fmt::format("Computed in {:.1f} min on {} threads.", seconds / 60, num_threads()));
  emit(table, o);

  // The battery again with the repetition penalty: how much of its ranking is decoding, not weights.
  Table pen(fmt::format("Question battery without and with a repetition penalty of {:g} (llama.cpp's, last 64 tokens, "
                        "prompt included)", q.battery_penalty),
            {"scheme", "battery, no penalty", fmt::format("battery, penalty {:g}", q.battery_penalty), "change",
             "answers that differ", "questions flipped"});
  for (const Result& r : results) {
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
    for (const Result& r : results)
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
  emit(pen, o);

  // Per question: which models got it right.
  std::vector<std::string> headers = {"question", "fp32 answer"};
  for (const Result& r : results) headers.push_back(r.info.scheme);
  Table per_q("Question battery: the fp32 answer and who answered correctly (+) or not (.)", headers);
  for (std::size_t i = 0; i < questions.size(); ++i) {
    std::string answer = results[0].battery.replies[i];
    std::replace(answer.begin(), answer.end(), '\n', ' ');
    if (answer.size() > 40) answer = answer.substr(0, 37) + "...";
    std::vector<std::string> row = {questions[i].question, answer};
    for (const Result& r : results) row.push_back(r.battery.correct[i] ? "+" : ".");
    per_q.add_row(row);
  }
  emit(per_q, o);
}

// --- part 2: the model on the packed kernels ---

// --quant: every matrix packed, the text generated with chapter 02's loop and chapter 03's
// cache, streamed as it comes.
void generate_quantized(LoadedModel& m, const CommonOptions& o, PackedFormat format, RunRecord& record) {
  record.prompt_ids = encode_prompt(m, o);  // first: a prompt that does not fit is refused before the packing
  const QuantizedModel info = quantize_for_kernels(m.model, format);
  fmt::print(stderr, "packed every matrix as {} ({:.3f} bits/weight): the weights now take {}, in {:.1f} s\n", info.scheme,
             info.bits_per_weight(), format_bytes(static_cast<double>(m.model.weights().bytes_held())), info.seconds);
  GroupedKvCache cache(m.model.config(), static_cast<int64_t>(record.prompt_ids.size()) + o.n_predict, m.model.device());
  Sampler sampler(o.sampling);
  sampler.accept(record.prompt_ids);  // --repeat-penalty counts the prompt too, as llama.cpp does
  TextStreamer stream(m.tokenizer, record.text);
  std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
  std::fflush(stdout);
  const GenerateOptions options{.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5};
  const Generation gen = generate_cached(m.model, m.tokenizer, record.prompt_ids, cache, sampler, options, std::ref(stream));
  stream.finish();
  record.steps = gen.steps;
  std::vector<double> decode;
  for (std::size_t i = 1; i < gen.steps.size(); ++i) decode.push_back(gen.steps[i].seconds);
  const double ttft = gen.steps.empty() ? 0 : gen.steps[0].seconds;
  const double tps = decode.empty() ? 0 : 1.0 / median(decode);
  fmt::print("{} tokens through the {} kernels ({} threads): time to first token {:.1f} ms, decode {:.1f} tokens/s "
             "(median step)\n", gen.steps.size(), info.scheme, num_threads(), 1e3 * ttft, tps);
  record.figures["quant"] = {{"scheme", info.scheme}, {"flag", format_flag(format)}, {"bits_per_weight", info.bits_per_weight()},
                             {"weight_bytes", m.model.weights().bytes_held()}, {"ttft_s", ttft}, {"decode_tokens_per_s", tps}};
}

// --speed: fp32 and every format, decode and prefill, timed side by side.
void speed_tables(LoadedModel& m, const CommonOptions& o, const SpeedOptions& s, nlohmann::json& figures) {
  const BandwidthResult bw = measure_read_bandwidth();
  const std::vector<SpeedRow> rows =
      measure_speed(m.model, m.tokenizer, std::vector<PackedFormat>(kPackedFormats.begin(), kPackedFormats.end()), s);
  emit(speed_table(rows, s, bw.bytes_per_second), o);
  figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second}};
  for (const SpeedRow& r : rows)
    figures["speed"].push_back({{"scheme", r.scheme}, {"flag", r.flag}, {"model_bytes", r.model_bytes},
                                {"bits_per_weight", r.bits_per_weight}, {"bytes_per_token", r.bytes_per_token},
                                {"decode_seconds", r.decode_seconds}, {"prefill_seconds", r.prefill_seconds},
                                {"context", s.context}, {"prefill_tokens", s.prefill_tokens}});
}

// --memory: the "what fits" tables. Arithmetic on shapes only: the model file is opened for
// its configuration, never run (nor its weights loaded).
void memory_tables(const CommonOptions& o, nlohmann::json& figures) {
  auto record = [&](const Table& t) {
    emit(t, o);
    figures["memory"].push_back({{"title", t.title()}, {"rows", t.rows()}});
  };
  for (const Table& t : gpu_budget_tables()) record(t);
  const std::optional<MachineMemory> ram = read_meminfo();
  if (!ram) {
    fmt::print(stderr, "/proc/meminfo has no MemTotal/MemAvailable: no table for this machine\n");
    return;
  }
  const gguf::GgufFile file = gguf::GgufFile::open(o.model_path);
  std::string name = std::filesystem::path(o.model_path).filename().string();  // SmolLM2-135M-Instruct.Q4_1.gguf
  name = name.substr(0, name.find('.'));  // the model, not the file's own quantization
  const NamedConfig model{name, LlamaConfig::from_gguf(file)};
  record(machine_budget_table(model, *ram));
  figures["machine_memory"] = {{"mem_total_bytes", ram->total_bytes}, {"mem_available_bytes", ram->available_bytes}};
}

}  // namespace

// The flags each mode leaves unused, refused when given (refuse_flags).
const std::initializer_list<std::string_view> kGenerationFlags = {"--prompt", "--n-predict", "--chat", "--seed",
                                                                  "--temp", "--top-k", "--top-p", "--repeat-penalty",
                                                                  "--repeat-last-n"};
const std::initializer_list<std::string_view> kQualityFlags = {"--eval-tokens", "--window", "--agree-tokens",
                                                               "--answer-tokens", "--no-quality", "--battery-penalty",
                                                               "--calib-tokens"};

int main(int argc, char** argv) {
  CLI::App app{"Chapter 06: weight quantization schemes and what they cost in quality"};
  CommonOptions o;
  QualityOptions q;
  bool no_quality = false;
  add_common_options(app, o);
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
  app.add_option("--calib-tokens", q.calib_tokens, "SmoothQuant's calibration tokens (the text before the held-out slice)")
      ->check(whole_number(1, 8192))->capture_default_str();
  app.add_flag("--no-quality", no_quality, "skip the quality table (no evaluation text needed)");
  std::string quant;
  bool speed = false;
  SpeedOptions speed_options;
  auto* quant_opt = app.add_option("--quant", quant, "part 2: pack every matrix in SCHEME (int8, int4-g128, nf4, q8_0, q4_1) "
                                                     "and generate through the kernels (-p, -n, --chat, sampling)");
  auto* speed_opt = app.add_flag("--speed", speed, "part 2: the speed table of the kernels (decode and prefill, fp32 and every scheme)")
                        ->excludes(quant_opt);
  app.add_option("--rounds", speed_options.rounds, "--speed: rounds of timing (each model timed once per round)")
      ->check(whole_number(1, 1000))->capture_default_str();
  bool memory = false;
  app.add_flag("--memory", memory, "part 2: what fits — weights, context and users for 7B/13B/70B on 8/16/24 GB "
                                   "cards, and for this model in this machine's RAM (no model run)")
      ->excludes(quant_opt)->excludes(speed_opt);

  return run_main(app, argc, argv, [&] {
    if (memory) {
      refuse_flags(app, "--memory", kGenerationFlags);
      refuse_flags(app, "--memory", kQualityFlags);
      refuse_flags(app, "--memory", {"--rounds", "--threads", "--device"});
      check_common_options(o);
      RunRecord record = new_record("ch06_quantization", o, "tables");
      memory_tables(o, record.figures);
      save_record(record, o, nullptr);
      return;
    }
    if (!quant.empty()) {
      refuse_flags(app, "--quant", kQualityFlags);
      refuse_flags(app, "--quant", {"--rounds"});
      const std::optional<PackedFormat> format = parse_format_flag(quant);
      if (!format) throw UsageError(fmt::format("--quant: unknown scheme '{}' (int8, int4-g128, nf4, q8_0, q4_1)", quant));
      if (o.prompt.empty()) o.prompt = "The three most important ideas in computer science are";
      LoadedModel m = load_model(o);
      RunRecord record = new_record("ch06_quantization", o);
      generate_quantized(m, o, *format, record);
      save_record(record, o, &m.tokenizer);
      return;
    }
    if (speed) {
      refuse_flags(app, "--speed", kGenerationFlags);
      refuse_flags(app, "--speed", kQualityFlags);
      LoadedModel m = load_model(o);
      RunRecord record = new_record("ch06_quantization", o, "tables");
      speed_tables(m, o, speed_options, record.figures);
      save_record(record, o, nullptr);
      return;
    }
    refuse_flags(app, "the tables (without --quant)", kGenerationFlags);
    refuse_flags(app, "the tables (without --speed)", {"--rounds"});
    if (no_quality)
      refuse_flags(app, "--no-quality", {"--eval-tokens", "--window", "--agree-tokens", "--answer-tokens",
                                         "--battery-penalty", "--calib-tokens"});
    LoadedModel m = load_model(o);
    if (q.window > m.model.config().context_length)
      throw UsageError(fmt::format("--window {} exceeds the context length {}", q.window, m.model.config().context_length));
    RunRecord record = new_record("ch06_quantization", o, "tables");
    record.prompt = kOutlierPrompt;
    weight_error_tables(m.model, o, record.figures);
    activation_tables(m.model, m.tokenizer, o, record.figures);
    if (!no_quality) quality_tables(m, o, q, record.figures);
    save_record(record, o, nullptr);
  });
}
