// ch02_kv_cache — generate with a KV cache: prefill the prompt once, then decode one token per step.
//
//   ch02_kv_cache                          the demo (chapter 01's prompt, 32 tokens), then the tables
//   ch02_kv_cache -p "..." -n 64 --chat    your prompt, in the chat template
//   ch02_kv_cache --skip-tables --json b.json   just generate (compare with stage_diff)
//   ch02_kv_cache --csv t.csv --plot p.svg      tables as CSV, the plot elsewhere (default: here,
//                                               ch02_prefill_vs_decode.svg)
//
// The tables, in the order printed:
//   f  the demo run: time to first token and tokens/s, beside chapter 01's loop on the same generation
//   c  peak memory above the weights, chapter 01's loop vs this one, for that same generation
//   a  one attention head, one step computed both ways (recompute n×n vs 1×n against a cache)
//   b  multiply-accumulates to generate T tokens from cold start, recompute vs cache
//   d  prefill: time per token for prompts of P tokens
//   e  decode: time per step with C tokens in the cache
//   g  cache bytes: the real allocations against 2 × layers × heads × head_dim × 4 B per token
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "app/text_streamer.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "cached_generate.hpp"
#include "forward_cost.hpp"
#include "kv_cache.hpp"
#include "measure/bandwidth.hpp"
#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "naive_generate.hpp"
#include "tensor/memory.hpp"
#include "tensor/ops.hpp"

using namespace infer;
using nlohmann::json;

namespace {

struct Context {
  LoadedModel& m;
  const CommonOptions& o;
  int repeats;
  json& figures;
  std::string machine;  // "2 threads, read bandwidth 9.8 GB/s": printed beside every timing
};

// Median seconds of `runs` runs after one warm-up run; a single run is timed as it is.
double time_runs(int runs, const std::function<void()>& fn) {
  if (runs > 1) return median_seconds(runs, fn);
  Stopwatch clock;
  fn();
  return clock.seconds();
}

std::string ms(double seconds) { return fmt::format("{:.2f}", seconds * 1e3); }
std::string ratio(double r) { return fmt::format("{:.1f}×", r); }

void emit(const Table& table, const Context& cx) {
  table.print();
  table.append_csv(cx.o.csv_path);
}

// Bytes one cached token occupies: a key and a value vector per layer, for every query head.
int64_t cache_bytes_per_token(const LlamaConfig& c) { return 2LL * c.n_layers * c.n_heads * c.head_dim * 4; }

// A token sequence of `n` real tokens (a text repeated) for the prefill and decode sweeps.
std::vector<int32_t> filler_tokens(const Tokenizer& tokenizer, int64_t n) {
  return repeated_tokens(
      tokenizer,
      "A key and a value are computed for every position of the prompt once, stored, and read again "
      "at every later step; the prompt is processed in one batched pass and each new token in a "
      "small pass of its own. ",
      n);
}

// ---- the demo run and chapter 01's loop on the same generation: tables f and c ----

struct LoopRun {
  Generation gen;
  int64_t peak_bytes = 0;   // allocator high-water mark above what was allocated before
  int64_t cache_bytes = 0;  // the KV cache's share of it (0 for the naive loop)
};

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

void demo_tables(const Context& cx, const RunRecord& record, const LoopRun& cached, const LoopRun& naive) {
  const Generation &a = naive.gen, &b = cached.gen;
  bool same = a.steps.size() == b.steps.size();
  for (std::size_t i = 0; same && i < a.steps.size(); ++i) same = a.steps[i].token == b.steps[i].token;

  Table f(fmt::format("The demo run: {} prompt tokens, {} generated ({})", record.prompt_ids.size(), b.steps.size(), cx.machine),
          {"quantity", "ch01 naive loop", "ch02 KV cache", "ch02 speedup"});
  const double ttft_a = first_token_seconds(a), ttft_b = first_token_seconds(b);
  const double tps_a = decode_tokens_per_second(a), tps_b = decode_tokens_per_second(b);
  f.add_row({"time to first token (ms)", ms(ttft_a), ms(ttft_b), ratio(ttft_a / ttft_b)});
  f.add_row({"decode (tokens/s, median step)", fmt::format("{:.2f}", tps_a), fmt::format("{:.2f}", tps_b), ratio(tps_b / tps_a)});
  double total_a = 0, total_b = 0;
  for (const auto& s : a.steps) total_a += s.seconds;
  for (const auto& s : b.steps) total_b += s.seconds;
  f.add_row({"whole generation (ms)", ms(total_a), ms(total_b), ratio(total_a / total_b)});
  f.add_note(fmt::format("same tokens in both runs: {}; counted MACs equal forward_cost() at every step: {}",
                         same ? "yes" : "NO", costs_match(a) && costs_match(b) ? "yes" : "NO"));
  f.add_note("time to first token = step 1, the whole prompt in one pass in both loops (the same work: any difference is noise);");
  f.add_note("decode = steps 2…n: chapter 01 re-runs the whole sequence, chapter 02 feeds one token. One run each.");
  emit(f, cx);

  Table c("Peak memory above the weights for the demo generation (from the allocator)",
          {"generation loop", "peak (bytes)", "of which KV cache (bytes)"});
  c.add_row({"ch01 naive loop", format_bytes(static_cast<double>(naive.peak_bytes)), "none (recomputed)"});
  c.add_row({"ch02 KV cache", format_bytes(static_cast<double>(cached.peak_bytes)), format_bytes(static_cast<double>(cached.cache_bytes))});
  c.add_note(fmt::format("the cache is preallocated for prompt + n = {} tokens at {} per token; the naive loop's peak is one pass's "
                         "activations over the whole sequence, freed after every step: the cache trades memory for arithmetic.",
                         record.prompt_ids.size() + static_cast<std::size_t>(cx.o.n_predict),
                         format_bytes(static_cast<double>(cache_bytes_per_token(cx.m.model.config())))));
  emit(c, cx);

  cx.figures["demo"] = {{"prompt_tokens", record.prompt_ids.size()}, {"generated", b.steps.size()}, {"same_tokens_as_ch01", same},
                        {"ch01", {{"ttft_s", ttft_a}, {"decode_tokens_per_s", tps_a}, {"total_s", total_a}}},
                        {"ch02", {{"ttft_s", ttft_b}, {"decode_tokens_per_s", tps_b}, {"total_s", total_b}}}};
  cx.figures["memory"] = {{"ch01_peak_bytes", naive.peak_bytes}, {"ch02_peak_bytes", cached.peak_bytes},
                          {"ch02_cache_bytes", cached.cache_bytes}};
  if (!same) throw std::runtime_error("chapter 01 and chapter 02 generated different tokens for the same prompt");
}

// ---- table a: one attention head, one step both ways ----

void attention_table(const Context& cx) {
  constexpr int64_t D = 64;
  const std::vector<int64_t> ns{256, 512, 1024, 2048, 4096};
  Table t(fmt::format("One attention head (d = {}), one generation step computed both ways ({})", D, cx.machine),
          {"n (tokens)", "runs", "recompute n×n (ms)", "with cache 1×n (ms)", "speedup", "scores n×n (bytes)",
           "scores 1×n (bytes)", "same last row"});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ProgressBar bar("attention, recompute vs cache", static_cast<int64_t>(ns.size()));
  for (int64_t n : ns) {
    std::vector<float> values(static_cast<std::size_t>(3 * n * D));
    for (float& x : values) x = normal(rng);
    const std::span<const float> all(values);
    const Tensor q = Tensor::from_vector(all.subspan(0, static_cast<std::size_t>(n * D)), {n, D});
    const Tensor k = Tensor::from_vector(all.subspan(static_cast<std::size_t>(n * D), static_cast<std::size_t>(n * D)), {n, D});
    const Tensor v = Tensor::from_vector(all.subspan(static_cast<std::size_t>(2 * n * D)), {n, D});
    Tensor out_all({n, D}), out_one({1, D});
    const Tensor q_last = q.row(n - 1);
    // Recompute: all n queries against all n keys (causal), as the naive loop does at every step.
    const int runs = n >= 2048 ? std::min(cx.repeats, 3) : cx.repeats;
    const double t_all = time_runs(runs, [&] { ops::attention(q, k, v, 1, 1, 0, out_all); });
    // Cached: only the newest query, against the n stored keys and values.
    const double t_one = time_runs(cx.repeats, [&] { ops::attention(q_last, k, v, 1, 1, n - 1, out_one); });
    const std::vector<float> last_all = out_all.row(n - 1).to_vector(), one = out_one.to_vector();
    const bool same = last_all == one;
    const double n_sq_bytes = static_cast<double>(n * n * 4), n_bytes = static_cast<double>(n * 4);
    t.add_row({std::to_string(n), std::to_string(runs), ms(t_all), fmt::format("{:.4f}", t_one * 1e3), ratio(t_all / t_one),
               format_bytes(n_sq_bytes), format_bytes(n_bytes), same ? "yes" : "NO"});
    cx.figures["attention"].push_back({{"n", n}, {"recompute_s", t_all}, {"cached_s", t_one},
                                       {"recompute_score_bytes", n_sq_bytes}, {"cached_score_bytes", n_bytes}, {"same_last_row", same}});
    bar.advance();
  }
  bar.done();
  t.add_note("scores: the size of the score matrix the step computes, 4-byte floats (ops::attention computes the causal half,");
  t.add_note("one row at a time). The recompute spreads its n rows over the threads; the cached step is one row on one thread.");
  t.add_note("same last row: the cached step's output equals the last row of the full recompute, bit for bit.");
  emit(t, cx);
}

// ---- table b: MACs to generate T tokens from cold start ----

void macs_table(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  const std::vector<int64_t> Ts{64, 128, 256, 512, 1024, 2048};
  constexpr int64_t kChecked = 64;  // the rows checked against a real run's operation counters
  // Cold start: a one-token prompt and an empty cache; step t feeds the whole t-token sequence
  // (recompute) or only its newest token (cache). Each step yields one new token.
  auto recompute = [&](int64_t T) { int64_t s = 0; for (int64_t t = 1; t <= T; ++t) s += forward_cost(c, t, 0, 1).total(); return s; };
  auto cached = [&](int64_t T) { int64_t s = 0; for (int64_t t = 1; t <= T; ++t) s += forward_cost(c, 1, t - 1, 1).total(); return s; };

  const std::vector<int32_t> one_token{cx.m.tokenizer.encode("The")[0]};
  const GenerateOptions opts{.n_predict = static_cast<int>(kChecked), .stop_at_end = false, .top_logits = 1};
  ProgressBar bar(fmt::format("MACs: real runs of {} tokens from cold start", kChecked), 2 * kChecked);
  Sampler greedy_a({.temperature = 0.0f}), greedy_b({.temperature = 0.0f});
  const auto tick = [&](const StepRecord&) { bar.advance(); };
  const Generation naive = generate_naive(cx.m.model, cx.m.tokenizer, one_token, greedy_a, opts, tick);
  KvCache cache(c, kChecked, cx.m.model.device());
  const Generation with_cache = generate_cached(cx.m.model, cx.m.tokenizer, one_token, cache, greedy_b, opts, tick);
  bar.done();
  int64_t counted_naive = 0, counted_cached = 0;
  for (const StepCost& s : naive.costs) counted_naive += s.macs_counted;
  for (const StepCost& s : with_cache.costs) counted_cached += s.macs_counted;

  Table t("Multiply-accumulates to generate T tokens from cold start (one-token prompt, empty cache)",
          {"T (tokens)", "recompute (GMAC)", "with cache (GMAC)", "ratio", "checked against counters"});
  bool all_equal = true;
  for (int64_t T : Ts) {
    const int64_t r = recompute(T), k = cached(T);
    std::string check = "formula only";
    if (T == kChecked) {
      const bool ok = counted_naive == r && counted_cached == k;
      all_equal = all_equal && ok;
      check = ok ? "yes: counted = formula" : fmt::format("MISMATCH ({} / {})", counted_naive, counted_cached);
    }
    t.add_row({std::to_string(T), format_count(static_cast<double>(r) / 1e9), fmt::format("{:.1f}", static_cast<double>(k) / 1e9),
               ratio(static_cast<double>(r) / static_cast<double>(k)), check});
    cx.figures["macs"].push_back({{"T", T}, {"recompute", r}, {"cached", k}, {"checked", T == kChecked}});
  }
  const double g_r = std::log2(static_cast<double>(recompute(2048)) / static_cast<double>(recompute(1024)));
  const double g_k = std::log2(static_cast<double>(cached(2048)) / static_cast<double>(cached(1024)));
  t.add_note(fmt::format("sums of forward_cost() over the steps; T = {} was also run for real both ways, and the operations' own", kChecked));
  t.add_note("counters (reset_op_counters/op_counters) summed over its steps equal the sums exactly.");
  t.add_note(fmt::format("from T = 1024 to 2048: recompute grows as T^{:.2f}, cache as T^{:.2f}; in the limit the attention terms "
                         "make them T³ and T².", g_r, g_k));
  emit(t, cx);
  if (!all_equal) throw std::runtime_error("counted MACs differ from the closed-form count");
}

// ---- tables d and e: prefill per token and decode per step, plus the plot ----

void prefill_decode_tables(const Context& cx, const std::string& plot_path) {
  const LlamaConfig& c = cx.m.model.config();
  const Device dev = cx.m.model.device();
  std::vector<int64_t> lengths;
  for (int64_t n : {16, 64, 256, 1024})
    if (n + 1 <= c.context_length) lengths.push_back(n);
  const int64_t longest = lengths.back();
  const std::vector<int32_t> tokens = filler_tokens(cx.m.tokenizer, longest + 1);
  KvCache cache(c, longest + 1, dev);
  const double weight_bytes = static_cast<double>(cx.m.model.weights().bytes_per_token());

  ProgressBar bar("prefill and decode sweeps", 2 * static_cast<int64_t>(lengths.size()));
  // Prefill, shortest first: the last one leaves `longest` valid positions in the cache.
  Table d(fmt::format("Prefill: the prompt in one pass ({})", cx.machine),
          {"P (prompt tokens)", "runs", "prefill = time to first token (ms)", "per token (ms)", "GFLOP/s"});
  std::vector<double> xs_p, ys_p;
  for (int64_t P : lengths) {
    const int runs = P >= 1024 ? 1 : P >= 256 ? std::min(cx.repeats, 3) : cx.repeats;
    const std::span<const int32_t> prompt(tokens.data(), static_cast<std::size_t>(P));
    const double s = time_runs(runs, [&] { (void)cx.m.model.forward(prompt, 0, cache).to(Device::cpu()); });
    const double flops = 2.0 * static_cast<double>(forward_cost(c, P, 0, 1).total());
    d.add_row({std::to_string(P), std::to_string(runs), ms(s), fmt::format("{:.3f}", s * 1e3 / static_cast<double>(P)),
               fmt::format("{:.1f}", flops / s / 1e9)});
    cx.figures["prefill"].push_back({{"P", P}, {"seconds", s}, {"per_token_s", s / static_cast<double>(P)}, {"gflops", flops / s / 1e9}});
    xs_p.push_back(static_cast<double>(P));
    ys_p.push_back(s * 1e3 / static_cast<double>(P));
    bar.advance();
  }
  d.add_note("one pass of matrix-matrix products: the weights are read once for all P tokens, so the cost per token falls");
  d.add_note("until arithmetic, and then attention over the growing prompt (∝ P² in total), takes over.");

  // Decode: one token at position C against the C tokens already in the cache. The token fed is
  // the one the prefill had at position C, so the slot it overwrites gets the same key and value.
  Table e(fmt::format("Decode: one token against a cache of C tokens ({})", cx.machine),
          {"C (cached tokens)", "runs", "step (ms)", "tokens/s", "cache read (bytes)", "weights + cache read (GB/s)", "of bandwidth"});
  std::vector<double> xs_d, ys_d;
  const double bandwidth = cx.figures["machine"]["read_bandwidth_bytes_per_s"].get<double>();
  for (int64_t C : lengths) {
    const std::span<const int32_t> token(tokens.data() + C, 1);
    const double s = time_runs(cx.repeats, [&] { (void)cx.m.model.forward(token, C, cache).to(Device::cpu()); });
    const double cache_read = static_cast<double>((C + 1) * cache_bytes_per_token(c));
    const double rate = (weight_bytes + cache_read) / s;
    e.add_row({std::to_string(C), std::to_string(cx.repeats), ms(s), fmt::format("{:.2f}", 1.0 / s), format_bytes(cache_read),
               fmt::format("{:.2f}", rate / 1e9), fmt::format("{:.0f}%", 100.0 * rate / bandwidth)});
    cx.figures["decode"].push_back({{"C", C}, {"seconds", s}, {"cache_read_bytes", cache_read}, {"bytes_per_s", rate}});
    xs_d.push_back(static_cast<double>(C));
    ys_d.push_back(s * 1e3);
    bar.advance();
  }
  bar.done();
  e.add_note(fmt::format("every step reads all {} of weights once; the cache adds {} per cached token, which is why the",
                         format_bytes(weight_bytes), format_bytes(static_cast<double>(cache_bytes_per_token(c)))));
  e.add_note("step time is nearly flat in C while the weights dominate, and creeps up as the cache grows (chapter 03 shrinks it).");
  emit(d, cx);
  emit(e, cx);

  if (plot_path.empty()) return;
  LinePlot plot(fmt::format("Prefill vs decode, {} ({})", std::filesystem::path(cx.o.model_path).stem().string(), cx.machine),
                "prompt length P (prefill) or cache length C (decode), tokens", "milliseconds per token");
  plot.set_log_x(true);
  plot.add_series("prefill: time per prompt token", xs_p, ys_p);
  plot.add_series("decode: time per generated token", xs_d, ys_d);
  plot.write(plot_path);
  fmt::print("plot written to {}\n\n", plot_path);
}

// ---- table g: cache bytes, measured against the formula ----

void cache_bytes_table(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  const Device dev = cx.m.model.device();
  const int64_t per_token = cache_bytes_per_token(c);
  Table t(fmt::format("KV cache size: caches built one after the other, summed; formula 2 × {} layers × {} heads × {} × 4 B = {} per token",
                      c.n_layers, c.n_heads, c.head_dim, format_count(static_cast<double>(per_token))),
          {"users × tokens", "KvCache::bytes() (bytes)", "allocator (bytes)", "formula (bytes)", "equal"});
  const std::vector<std::pair<int64_t, int64_t>> shapes{{4, 2048}, {8, 1024}, {16, 512}};
  ProgressBar bar("building caches", static_cast<int64_t>(shapes.size()));
  bool all_equal = true;
  for (const auto& [users, n] : shapes) {
    if (n > c.context_length) continue;
    int64_t reported = 0, allocated = 0;
    for (int64_t u = 0; u < users; ++u) {
      const int64_t before = memory_stats(dev).current_bytes;
      const KvCache cache(c, n, dev);
      allocated += memory_stats(dev).current_bytes - before;
      reported += static_cast<int64_t>(cache.bytes());
    }
    const int64_t formula = users * n * per_token;
    const bool equal = reported == formula && allocated == formula;
    all_equal = all_equal && equal;
    t.add_row({fmt::format("{} × {}", users, n), format_count(static_cast<double>(reported)), format_count(static_cast<double>(allocated)),
               format_count(static_cast<double>(formula)), equal ? "yes" : "NO"});
    cx.figures["cache_bytes"].push_back({{"users", users}, {"tokens", n}, {"kvcache_bytes", reported}, {"allocated", allocated}, {"formula", formula}});
    bar.advance();
  }
  bar.done();
  t.add_note(fmt::format("{} GB for 8192 cached tokens, whatever way they are split between users; this model stores its {} key/value",
                         fmt::format("{:.2f}", static_cast<double>(8192 * per_token) / 1e9), c.n_kv_heads));
  t.add_note(fmt::format("heads once per query head ({}×), the plain multi-head layout: chapter 03 stores each once.", c.n_heads / c.n_kv_heads));
  emit(t, cx);
  if (!all_equal) throw std::runtime_error("cache bytes differ from the formula");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 02: the KV cache — prefill the prompt once, then decode one token per step against the cache"};
  CommonOptions o;
  o.prompt = "The three most important ideas in computer science are";
  o.n_predict = 32;
  bool skip_tables = false;
  int repeats = 5;
  std::string plot_path = "ch02_prefill_vs_decode.svg";  // in the working directory, never over docs/
  add_common_options(app, o);
  app.add_flag("--skip-tables", skip_tables, "only generate (no comparison with chapter 01, no sweeps)");
  app.add_option("--repeats", repeats, "timed repeats per measurement (the median is reported)")
      ->check(whole_number(1))->capture_default_str();
  app.add_option("--plot", plot_path, "SVG file for the prefill-vs-decode plot (empty: none)")->capture_default_str();

  return run_main(app, argc, argv, [&] {
    if (skip_tables) refuse_flags(app, "--skip-tables", {"--csv", "--plot", "--repeats"});
    if (!skip_tables) check_output_path(plot_path, "--plot");
    LoadedModel m = load_model(o);
    RunRecord record = new_record("ch02_kv_cache", o);
    record.prompt_ids = encode_prompt(m, o);
    const Device dev = m.model.device();
    const GenerateOptions gen_options{.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5};

    // The demo: prefill, then decode, streaming the text. The allocator's peak above what was
    // allocated before (the weights) is this loop's memory, cache included.
    LoopRun cached;
    {
      Sampler sampler(o.sampling);
      TextStreamer stream(m.tokenizer, record.text);
      std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
      std::fflush(stdout);
      const int64_t before = memory_stats(dev).current_bytes;
      reset_peak_memory(dev);
      KvCache cache(m.model.config(), static_cast<int64_t>(record.prompt_ids.size()) + o.n_predict, dev);
      cached.gen = generate_cached(m.model, m.tokenizer, record.prompt_ids, cache, sampler, gen_options, std::ref(stream));
      cached.peak_bytes = memory_stats(dev).peak_bytes - before;
      cached.cache_bytes = static_cast<int64_t>(cache.bytes());
      stream.finish();
    }
    record.steps = cached.gen.steps;
    if (skip_tables) {
      save_record(record, o, &m.tokenizer);
      return;
    }

    const BandwidthResult bw = measure_read_bandwidth();
    record.figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second}};
    Context cx{m, o, repeats, record.figures,
               fmt::format("{} threads, read bandwidth {:.1f} GB/s", num_threads(), bw.bytes_per_second / 1e9)};

    // Chapter 01's loop on the same generation, for tables f and c.
    LoopRun naive;
    {
      Sampler sampler(o.sampling);
      ProgressBar bar("chapter 01's loop on the same generation", static_cast<int64_t>(cached.gen.steps.size()));
      const int64_t before = memory_stats(dev).current_bytes;
      reset_peak_memory(dev);
      naive.gen = generate_naive(m.model, m.tokenizer, record.prompt_ids, sampler, gen_options, [&](const StepRecord&) { bar.advance(); });
      naive.peak_bytes = memory_stats(dev).peak_bytes - before;
    }
    demo_tables(cx, record, cached, naive);
    attention_table(cx);
    macs_table(cx);
    prefill_decode_tables(cx, plot_path);
    cache_bytes_table(cx);
    save_record(record, o, &m.tokenizer);
  });
}
