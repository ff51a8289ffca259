#include "phases.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "cached_generate.hpp"
#include "01_naive_loop/forward_cost.hpp"
#include "generation_cost.hpp"
#include "kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"

namespace infer::kv {

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

  ProgressBar bar("prefill and decode sweeps", 2 * std::ssize(lengths));
  // Prefill, shortest first: the last one leaves `longest` valid positions in the cache.
  Table d(fmt::format("5. Prefill: the prompt in one pass ({})", cx.machine_line),
          {"P (prompt tokens)", "runs", "prefill = time to first token (ms)", "per token (ms)", "GFLOP/s"});
  std::vector<double> xs_p, ys_p;
  for (int64_t P : lengths) {
    const int runs = P >= 1024 ? 1 : P >= 256 ? std::min(cx.repeats, 3) : cx.repeats;
    const std::span<const int32_t> prompt(tokens.data(), P);
    const double s = time_runs(runs, [&] { (void)cx.m.model.forward(prompt, 0, cache).to(Device::cpu()); });
    const double flops = 2.0 * static_cast<double>(forward_cost(c, P, 0, 1).total());
    d.add_row({std::to_string(P), std::to_string(runs), cell::ms(s), fmt::format("{:.3f}", s * 1e3 / static_cast<double>(P)),
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
  Table e(fmt::format("6. Decode: one token against a cache of C tokens ({})", cx.machine_line),
          {"C (cached tokens)", "runs", "step (ms)", "tokens/s", "cache read (bytes)", "weights + cache read (GB/s)", "of bandwidth"});
  std::vector<double> xs_d, ys_d;
  for (int64_t C : lengths) {
    const std::span<const int32_t> token(tokens.data() + C, 1);
    const double s = time_runs(cx.repeats, [&] { (void)cx.m.model.forward(token, C, cache).to(Device::cpu()); });
    const double cache_read = static_cast<double>((C + 1) * c.kv_bytes_per_token(4, c.n_heads));
    const double rate = (weight_bytes + cache_read) / s;
    e.add_row({std::to_string(C), std::to_string(cx.repeats), cell::ms(s), fmt::format("{:.2f}", 1.0 / s), format_bytes(cache_read),
               fmt::format("{:.2f}", rate / 1e9), fmt::format("{:.0f}%", 100.0 * rate / cx.bandwidth)});
    cx.figures["decode"].push_back({{"C", C}, {"seconds", s}, {"cache_read_bytes", cache_read}, {"bytes_per_s", rate}});
    xs_d.push_back(static_cast<double>(C));
    ys_d.push_back(s * 1e3);
    bar.advance();
  }
  bar.done();
  e.add_note(fmt::format("every step reads all {} of weights once; the cache adds {} per cached token, which is why the",
                         format_bytes(weight_bytes), format_bytes(static_cast<double>(c.kv_bytes_per_token(4, c.n_heads)))));
  e.add_note("step time is nearly flat in C while the weights dominate, and creeps up as the cache grows (chapter 03 shrinks it).");
  cx.emit(d);
  cx.emit(e);

  if (plot_path.empty()) return;
  LinePlot plot(fmt::format("Prefill vs decode, {} ({})", std::filesystem::path(cx.o.model_path).stem().string(), cx.machine_line),
                "prompt length P (prefill) or cache length C (decode), tokens", "milliseconds per token");
  plot.set_log_x(true);
  plot.add_series("prefill: time per prompt token", xs_p, ys_p);
  plot.add_series("decode: time per generated token", xs_d, ys_d);
  plot.write(plot_path);
  fmt::print("plot written to {}\n\n", plot_path);
}

void workload_table(const Context& cx, int64_t total) {
  const LlamaConfig& c = cx.m.model.config();
  const int64_t small = std::max<int64_t>(1, total / 16);
  const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> splits{
      {"prompt-heavy", {total - small, small}}, {"even", {total / 2, total - total / 2}}, {"answer-heavy", {small, total - small}}};
  int64_t steps = 0;
  for (const auto& [name, pg] : splits) steps += pg.second;
  ProgressBar bar(fmt::format("requests of {} tokens, three splits", total), steps);

  Table t(fmt::format("7. The same {} tokens split between prompt and answer: one request each, with the cache ({})", total, cx.machine_line),
          {"request", "prompt P", "answer G", "time to first token (ms)", "decode (ms)", "per decode step (ms)", "total (ms)",
           "share of time decoding", "work (GMAC)", "GFLOP/s"});
  for (const auto& [name, pg] : splits) {
    const auto [P, G] = pg;
    const std::vector<int32_t> prompt = filler_tokens(cx.m.tokenizer, P);
    KvCache cache(c, P + G, cx.m.model.device());
    Sampler greedy({.temperature = 0.0f});
    const Generation gen = generate_cached(cx.m.model, cx.m.tokenizer, prompt, cache, greedy,
                                           {.n_predict = static_cast<int>(G), .stop_at_end = false, .top_logits = 1},
                                           [&](const StepRecord&) { bar.advance(); });
    const double ttft = gen.steps.front().seconds;
    double decode = 0;
    for (std::size_t i = 1; i < gen.steps.size(); ++i) decode += gen.steps[i].seconds;
    const double whole = ttft + decode;
    const auto macs = static_cast<double>(generation_macs(c, P, G).cached);
    t.add_row({name, std::to_string(P), std::to_string(G), cell::ms(ttft), cell::ms(decode), G > 1 ? cell::ms(decode / static_cast<double>(G - 1)) : "",
               cell::ms(whole), fmt::format("{:.0f}%", 100 * decode / whole), fmt::format("{:.1f}", macs / 1e9),
               fmt::format("{:.1f}", 2 * macs / whole / 1e9)});
    cx.figures["workloads"].push_back({{"request", name}, {"P", P}, {"G", G}, {"ttft_s", ttft}, {"decode_s", decode},
                                       {"total_s", whole}, {"macs", macs}});
  }
  bar.done();
  t.add_note("one run each, greedy, no stop at an end token; decode = steps 2…G (step 1, the prefill, yields the first token).");
  t.add_note("work: forward_cost() summed over the steps. Nearly the same arithmetic in all three: a long prompt is one efficient");
  t.add_note("pass of matrix products, a long answer G passes that each read every weight for one token, so the answer costs the time.");
  cx.emit(t);
}

}  // namespace infer::kv
