#include "recompute.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "cached_generate.hpp"
#include "01_naive_loop/forward_cost.hpp"
#include "generation_cost.hpp"
#include "kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"

namespace infer::kv {
namespace {

double first_token_seconds(const Generation& g) { return g.steps.empty() ? 0 : g.steps[0].seconds; }
// 1 / the median decode step (steps 2…n): one slow step on a shared machine does not move it.
double decode_tokens_per_second(const Generation& g) {
  std::vector<double> s;
  for (std::size_t i = 1; i < g.steps.size(); ++i) s.push_back(g.steps[i].seconds);
  return s.empty() ? 0 : 1.0 / median(s);
}
bool costs_match(const Generation& g) {
  return std::all_of(g.costs.begin(), g.costs.end(), [](const StepCost& c) { return c.macs_counted == c.macs_formula; });
}
int64_t counted(const Generation& g) {
  int64_t sum = 0;
  for (const StepCost& s : g.costs) sum += s.macs_counted;
  return sum;
}

}  // namespace

void demo_table(const Context& cx, std::size_t prompt_tokens, const LoopRun& cached, const LoopRun& naive) {
  const Generation &a = naive.gen, &b = cached.gen;
  bool same = a.steps.size() == b.steps.size();
  for (std::size_t i = 0; same && i < a.steps.size(); ++i) same = a.steps[i].token == b.steps[i].token;

  Table f(fmt::format("1. The demo run: {} prompt tokens, {} generated ({})", prompt_tokens, b.steps.size(), cx.machine_line),
          {"quantity", "ch01 naive loop", "ch02 KV cache", "ch02 speedup"});
  const double ttft_a = first_token_seconds(a), ttft_b = first_token_seconds(b);
  const double tps_a = decode_tokens_per_second(a), tps_b = decode_tokens_per_second(b);
  f.add_row({"time to first token (ms)", cell::ms(ttft_a), cell::ms(ttft_b), cell::times(ttft_a / ttft_b, 1)});
  f.add_row({"decode (tokens/s, median step)", fmt::format("{:.2f}", tps_a), fmt::format("{:.2f}", tps_b), cell::times(tps_b / tps_a, 1)});
  double total_a = 0, total_b = 0;
  for (const auto& s : a.steps) total_a += s.seconds;
  for (const auto& s : b.steps) total_b += s.seconds;
  f.add_row({"whole generation (ms)", cell::ms(total_a), cell::ms(total_b), cell::times(total_a / total_b, 1)});
  f.add_note(fmt::format("same tokens in both runs: {}; counted MACs equal forward_cost() at every step: {}",
                         same ? "yes" : "NO", costs_match(a) && costs_match(b) ? "yes" : "NO"));
  f.add_note("time to first token = step 1, the whole prompt in one pass in both loops (the same work: any difference is noise);");
  f.add_note("decode = steps 2…n: chapter 01 re-runs the whole sequence, chapter 02 feeds one token. One run each.");
  cx.emit(f);

  cx.figures["demo"] = {{"prompt_tokens", prompt_tokens}, {"generated", b.steps.size()}, {"same_tokens_as_ch01", same},
                        {"ch01", {{"ttft_s", ttft_a}, {"decode_tokens_per_s", tps_a}, {"total_s", total_a}}},
                        {"ch02", {{"ttft_s", ttft_b}, {"decode_tokens_per_s", tps_b}, {"total_s", total_b}}}};
  if (!same) throw std::runtime_error("chapter 01 and chapter 02 generated different tokens for the same prompt");
}

void attention_table(const Context& cx, const std::string& plot_path) {
  constexpr int64_t D = 64;
  const std::vector<int64_t> ns{256, 512, 1024, 2048, 4096};
  Table t(fmt::format("2. One attention head (d = {}), one generation step computed both ways ({})", D, cx.machine_line),
          {"n (tokens)", "runs", "recompute n×n (ms)", "with cache 1×n (ms)", "speedup", "scores n×n (bytes)",
           "scores 1×n (bytes)", "same last row"});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ProgressBar bar("attention, recompute vs cache", std::ssize(ns));
  for (int64_t n : ns) {
    std::vector<float> values(3 * n * D);
    for (float& x : values) x = normal(rng);
    const std::span<const float> all(values);
    const Tensor q = Tensor::from_vector(all.subspan(0, n * D), {n, D});
    const Tensor k = Tensor::from_vector(all.subspan(n * D, n * D), {n, D});
    const Tensor v = Tensor::from_vector(all.subspan(2 * n * D), {n, D});
    Tensor out_all({n, D}), out_one({1, D});
    const Tensor q_last = q.row(n - 1);
    // Recompute: all n queries against all n keys (causal), as the naive loop does at every step.
    const int runs = n >= 2048 ? std::min(cx.repeats, 3) : cx.repeats;
    const double t_all = time_runs(runs, [&] { ops::attention(q, k, v, 1, 1, 0, out_all); });
    // Cached: only the newest query, against the n stored keys and values.
    const double t_one = time_runs(cx.repeats, [&] { ops::attention(q_last, k, v, 1, 1, n - 1, out_one); });
    const bool same = out_all.row(n - 1).to_vector() == out_one.to_vector();
    const double n_sq_bytes = static_cast<double>(n * n * 4), n_bytes = static_cast<double>(n * 4);
    t.add_row({std::to_string(n), std::to_string(runs), cell::ms(t_all), fmt::format("{:.4f}", t_one * 1e3), cell::times(t_all / t_one, 1),
               format_bytes(n_sq_bytes), format_bytes(n_bytes), same ? "yes" : "NO"});
    cx.figures["attention"].push_back({{"n", n}, {"recompute_s", t_all}, {"cached_s", t_one},
                                       {"recompute_score_bytes", n_sq_bytes}, {"cached_score_bytes", n_bytes}, {"same_last_row", same}});
    bar.advance();
  }
  bar.done();
  t.add_note("scores: the size of the score matrix the step computes, 4-byte floats (ops::attention computes the causal half,");
  t.add_note("one row at a time). The recompute spreads its n rows over the threads; the cached step is one row on one thread.");
  t.add_note("same last row: the cached step's output equals the last row of the full recompute, bit for bit.");
  cx.emit(t);

  if (plot_path.empty()) return;
  // The score matrix of one head against n, on log-log axes: n² has slope 2, n slope 1.
  std::vector<double> xs, full, row;
  for (int64_t n = 16; n <= 8192; n *= 2) {
    xs.push_back(static_cast<double>(n));
    full.push_back(static_cast<double>(n * n * 4));
    row.push_back(static_cast<double>(n * 4));
  }
  LinePlot plot("Score-matrix bytes of one attention head, one generation step (4-byte floats)",
                "sequence length n, tokens", "bytes");
  plot.set_log_x(true);
  plot.set_log_y(true);
  plot.add_series("recompute: n × n scores (naive loop)", xs, full);
  plot.add_series("with a cache: 1 × n scores", xs, row);
  plot.write(plot_path);
  fmt::print("plot written to {}\n\n", plot_path);
}

void macs_table(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  const std::vector<int64_t> Ts{64, 128, 256, 512, 1024, 2048};
  constexpr int64_t kChecked = 64;  // the row checked against a real run's operation counters
  // Cold start: a one-token prompt and an empty cache; step t feeds the whole t-token sequence
  // (recompute) or only its newest token (cache). Each step yields one new token.
  const std::vector<int32_t> one_token{cx.m.tokenizer.encode("The")[0]};
  const GenerateOptions opts{.n_predict = static_cast<int>(kChecked), .stop_at_end = false, .top_logits = 1};
  ProgressBar bar(fmt::format("MACs: real runs of {} tokens from cold start", kChecked), 2 * kChecked);
  Sampler greedy_a({.temperature = 0.0f}), greedy_b({.temperature = 0.0f});
  const auto tick = [&](const StepRecord&) { bar.advance(); };
  const Generation naive = generate_naive(cx.m.model, cx.m.tokenizer, one_token, greedy_a, opts, tick);
  KvCache cache(c, kChecked, cx.m.model.device());
  const Generation with_cache = generate_cached(cx.m.model, cx.m.tokenizer, one_token, cache, greedy_b, opts, tick);
  bar.done();

  Table t("3. Multiply-accumulates to generate T tokens from cold start (one-token prompt, empty cache)",
          {"T (tokens)", "recompute (GMAC)", "with cache (GMAC)", "ratio", "checked against counters"});
  bool all_equal = true;
  for (int64_t T : Ts) {
    const GenerationMacs g = generation_macs(c, 1, T);
    std::string check = "formula only";
    if (T == kChecked) {
      const bool ok = counted(naive) == g.recompute && counted(with_cache) == g.cached;
      all_equal = all_equal && ok;
      check = ok ? "yes: counted = formula" : fmt::format("MISMATCH ({} / {})", counted(naive), counted(with_cache));
    }
    t.add_row({std::to_string(T), format_count(static_cast<double>(g.recompute) / 1e9),
               fmt::format("{:.1f}", static_cast<double>(g.cached) / 1e9),
               cell::times(static_cast<double>(g.recompute) / static_cast<double>(g.cached), 1), check});
    cx.figures["macs"].push_back({{"T", T}, {"recompute", g.recompute}, {"cached", g.cached}, {"checked", T == kChecked}});
  }
  const GenerationMacs a = generation_macs(c, 1, 1024), b = generation_macs(c, 1, 2048);
  const double g_r = std::log2(static_cast<double>(b.recompute) / static_cast<double>(a.recompute));
  const double g_k = std::log2(static_cast<double>(b.cached) / static_cast<double>(a.cached));
  t.add_note(fmt::format("sums of forward_cost() over the steps; T = {} was also run for real both ways, and the operations' own", kChecked));
  t.add_note("counters (reset_op_counters/op_counters) summed over its steps equal the sums exactly.");
  t.add_note(fmt::format("from T = 1024 to 2048: recompute grows as T^{:.2f}, cache as T^{:.2f}; in the limit the attention terms "
                         "make them T³ and T².", g_r, g_k));
  cx.emit(t);
  if (!all_equal) throw std::runtime_error("counted MACs differ from the closed-form count");
}

void prompt_generated_table(const Context& cx, std::size_t prompt_tokens, const LoopRun& cached, const LoopRun& naive) {
  const LlamaConfig& c = cx.m.model.config();
  const std::vector<std::pair<int64_t, int64_t>> shapes{{256, 8}, {8, 256}, {128, 128}, {1024, 128}, {128, 1024}, {1024, 1024}};
  Table t("4. The cost in prompt (P) and generated (G) tokens: attention scores (q·k pairs, one head, one layer) and the "
          "whole model's MACs",
          {"P", "G", "recompute: scores", "P²G/2 + PG²/2 + G³/6", "cached: scores", "P²/2 + PG + G²/2", "scores ratio",
           "recompute (GMAC)", "cached (GMAC)", "MAC ratio"});
  auto count = [](double x) { return format_count(x); };
  for (const auto& [P, G] : shapes) {
    const int64_t r = recompute_scores(P, G), k = cached_scores(P, G);
    const GenerationMacs g = generation_macs(c, P, G);
    t.add_row({std::to_string(P), std::to_string(G), count(static_cast<double>(r)), count(std::round(recompute_scores_leading(P, G))),
               count(static_cast<double>(k)), count(std::round(cached_scores_leading(P, G))),
               cell::times(static_cast<double>(r) / static_cast<double>(k), 1), format_count(std::round(static_cast<double>(g.recompute) / 1e9)),
               fmt::format("{:.1f}", static_cast<double>(g.cached) / 1e9),
               cell::times(static_cast<double>(g.recompute) / static_cast<double>(g.cached), 1)});
    cx.figures["prompt_generated_cost"].push_back({{"P", P}, {"G", G}, {"recompute_scores", r}, {"cached_scores", k},
                                                   {"recompute_macs", g.recompute}, {"cached_macs", g.cached}});
  }
  // The demo's own runs: its counters summed against the formula for its P and G.
  const auto P = static_cast<int64_t>(prompt_tokens), G = std::ssize(cached.gen.steps);
  const GenerationMacs demo = generation_macs(c, P, G);
  const bool ok = counted(naive.gen) == demo.recompute && counted(cached.gen) == demo.cached;
  t.add_note("exact: Σ over the steps of n·p + n(n+1)/2 for n new tokens after p cached (closed forms in tables/generation_cost.hpp);");
  t.add_note("beside them the leading terms. The cached count has a G²/2 term the tutorial's O(P² + PG) leaves out: it matters when G > P.");
  t.add_note(fmt::format("GMAC: forward_cost() summed over the steps (every layer, the MLP and the vocabulary too). The demo (P = {}, G = {}): "
                         "counters {} / {} against the formula {} / {}: {}.",
                         P, G, counted(naive.gen), counted(cached.gen), demo.recompute, demo.cached, ok ? "equal" : "MISMATCH"));
  cx.emit(t);
  if (!ok) throw std::runtime_error("the demo's counted MACs differ from generation_macs()");
}

}  // namespace infer::kv
