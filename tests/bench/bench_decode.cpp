// bench_decode — chapter 02's performance targets (issue: chapter 02). Prints figures and whether
// each target is met; never fails.
//
//   1. Decode at context 128, fp32 weights: a decode step reads every weight once, so weight
//      bytes streamed per second should reach ≥ 80% of the machine's measured read bandwidth
//      through chapter 02's cache, and ≥ 85% (the performance issue) through chapter 03's grouped
//      cache, the engine's from then on; both steps and the read loop timed in turn.
//   2. 128 tokens after a 32-token prompt: chapter 02 (prefill + decode) ≥ 10× faster than
//      chapter 01 (the whole sequence at every step), beside the ceiling this machine allows.
//   3. Prefill is matrix-matrix work: a 256-token prefill's GFLOP/s beside a plain cblas_sgemm of
//      the MLP's shape ([256, 576] × [1536, 576]ᵀ) on the same threads.
//   4. Attention (issue: performance): in a 1 024-token prefill, attention takes ≤ 25% of the
//      pass; and the decode step at contexts 128, 1 024 and 4 096 with the grouped cache of
//      chapter 03, with attention's share of each step.
#include <cblas.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/cli.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "03_gqa/tables/timed_store.hpp"
#include "cached_generate.hpp"
#include "forward_cost.hpp"
#include "kv_cache.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "model/weights.hpp"
#include "naive_generate.hpp"
#include "tensor/ops.hpp"
#include "tensor/ops_cpu.hpp"

using namespace infer;

namespace {

// Bytes of keys and values a decode step at `context` reads: its context + 1 positions, every
// layer, `width` floats per position for each of k and v.
double cache_bytes(const LlamaConfig& c, int64_t context, int64_t width) {
  return static_cast<double>((context + 1) * 2 * c.n_layers * width * 4);
}

std::vector<int32_t> filler(const Tokenizer& tokenizer, int64_t n) {
  return repeated_tokens(
      tokenizer,
      "Benchmarks measure what the machine does, not what we hope it does; a median of several "
      "runs keeps one slow run from deciding the answer. ",
      n);
}

std::string verdict(bool met) { return met ? "met" : "NOT met"; }

// Runs `pass` `repeats` times (after one warm-up) and returns the median pass time and the
// median share of it spent in `store`'s attention, each share taken within one pass.
struct PassTiming {
  double pass_seconds = 0, attention_seconds = 0;
};
template <typename Pass>
PassTiming time_with_attention(int repeats, TimedStore& store, Pass&& pass) {
  pass();
  std::vector<double> pass_s, attention_s;
  for (int i = 0; i < repeats; ++i) {
    store.take_seconds();
    Stopwatch clock;
    pass();
    pass_s.push_back(clock.seconds());
    attention_s.push_back(store.take_seconds());
  }
  return {median(pass_s), median(attention_s)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: chapter 02's decode bandwidth, speedup over chapter 01, and prefill GFLOP/s"};
  CommonOptions o;
  o.threads = 2;
  int repeats = 9;
  bool skip_naive = false;
  add_common_options(app, o);
  app.add_option("--repeats", repeats, "timed repeats (median reported)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--skip-naive", skip_naive, "skip benchmark 2 (chapter 01's loop takes about a minute)");
  return run_main(app, argc, argv, [&] {
    LoadedModel m = load_model(o);
    const LlamaConfig& c = m.model.config();
    const BandwidthResult bw = measure_read_bandwidth();
    const std::vector<int32_t> tokens = filler(m.tokenizer, 160);
    fmt::print("{} threads, measured read bandwidth {:.2f} GB/s (table 2's ceiling; table 1 times the read loop "
               "again in its own rounds)\n\n",
               num_threads(), bw.bytes_per_second / 1e9);

    // The machine's matrix-matrix rate: lib's sgemm (OpenBLAS on one thread per chunk of lib's
    // pool, what prefill uses) on the MLP's shape [256, 576] × [1536, 576]ᵀ.
    const int n = 256, k = c.d_model, mm = c.d_ff;
    const Tensor x = Tensor::zeros({n, k}), w = Tensor::zeros({mm, k});
    Tensor y({n, mm});
    const double t_sgemm = median_seconds(repeats, [&] {
      cpu::sgemm(false, true, n, mm, k, 1.0f, x.host<float>(), w.host<float>(), 0.0f, y.host<float>());
    });
    const double sgemm_flops = 2.0 * n * mm * k, sgemm_rate = sgemm_flops / t_sgemm;  // FLOP/s

    // 1. Decode at context 128, through chapter 02's cache (every query head's keys and values)
    //    and chapter 03's grouped one (the cache of every later chapter).
    {
      constexpr int64_t kContext = 128;
      KvCache cache(c, kContext + 1);
      GroupedKvCache grouped(c, kContext + 1);
      m.model.forward(std::span(tokens.data(), kContext), 0, cache);  // prefill positions 0 … 127
      m.model.forward(std::span(tokens.data(), kContext), 0, grouped);
      const std::span<const int32_t> next(tokens.data() + kContext, 1);
      // The step's weight products alone: every matrix multiplied by one row, in a step's order,
      // with nothing between them. What they stream is the most a step could; the gap between
      // this column and the steps' is the rest of a step's work.
      struct Product {
        const Linear* w;
        Tensor x, y;
      };
      std::vector<Product> products;
      double product_bytes = 0;
      const auto add_product = [&](const Linear& w) {
        products.push_back({&w, Tensor::zeros({1, w.in_features()}), Tensor({1, w.out_features()})});
        product_bytes += static_cast<double>(w.weight_bytes());
      };
      for (const LayerWeights& L : m.model.weights().layers)
        for (const Linear* w : L.linears()) add_product(*w);
      add_product(*m.model.weights().output);
      // The two steps, the products and the plain read loop in turn, round after round: the
      // fractions divide figures from the same minutes.
      const ReadBandwidthProbe probe;
      const std::vector<std::function<void()>> work = {[&] { m.model.forward(next, kContext, cache); },
                                                       [&] { m.model.forward(next, kContext, grouped); },
                                                       [&] { for (Product& p : products) p.w->forward(p.x, p.y); },
                                                       [&] { probe.read_once(); }};
      const std::vector<double> medians = medians_in_turn(repeats, work);
      const double bandwidth = probe.result(medians[3]).bytes_per_second;
      const double step_weights = static_cast<double>(m.model.weights().bytes_per_token());
      const double weights[3] = {step_weights, step_weights, product_bytes};
      const auto fraction = [&](int i) { return weights[i] / medians[i] / bandwidth; };
      const double cache_read[3] = {cache_bytes(c, kContext, c.q_width()), cache_bytes(c, kContext, c.kv_width()), 0};
      Table t(fmt::format("1. Decode step at context {}, fp32 weights, {} threads, median of {} rounds (the steps, the "
                          "products alone and the read loop timed in turn; read bandwidth in the same rounds {:.2f} GB/s)",
                          kContext, num_threads(), repeats, bandwidth / 1e9),
              {"quantity", "chapter 02 cache", "chapter 03 cache", "weight products alone"});
      const auto row = [&](const std::string& name, const auto& cell) { t.add_row({name, cell(0), cell(1), cell(2)}); };
      row("decode step time", [&](int i) { return format_seconds(medians[i]); });
      row("weight bytes per step", [&](int i) { return format_bytes(weights[i]); });
      row("cache bytes read per step", [&](int i) { return i < 2 ? format_bytes(cache_read[i]) : std::string("none"); });
      row("weight bytes streamed per second", [&](int i) { return fmt::format("{:.2f} GB/s", weights[i] / medians[i] / 1e9); });
      row("fraction of read bandwidth (weights)", [&](int i) { return fmt::format("{:.0f}%", 100.0 * fraction(i)); });
      row("fraction incl. the cache read",
          [&](int i) { return fmt::format("{:.0f}%", 100.0 * (weights[i] + cache_read[i]) / medians[i] / bandwidth); });
      t.add_note("chapter 02's cache keeps keys and values for all 9 query heads; chapter 03's, for the 3 key/value heads.");
      t.add_note(fmt::format("weight products alone: the step's {} matrix products, one row each, in a step's order with nothing "
                             "between them; the steps' shortfall from this column is their other work (attention, norms, RoPE, "
                             "the hand-offs between products).",
                             products.size()));
      t.add_note(fmt::format("target (chapter 02): weights streamed at ≥ 80% of read bandwidth, its own cache — {}",
                             verdict(fraction(0) >= 0.80)));
      t.add_note(fmt::format("target (performance issue): ≥ 85%, the engine's cache (chapter 03 on) — {}", verdict(fraction(1) >= 0.85)));
      t.print();
      t.append_csv(o.csv_path);
    }

    // 2. 128 tokens after a 32-token prompt, chapter 02 vs chapter 01.
    if (!skip_naive) {
      const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 32);
      const GenerateOptions opts{.n_predict = 128, .stop_at_end = false, .top_logits = 1};
      Sampler greedy_a({.temperature = 0.0f}), greedy_b({.temperature = 0.0f});
      KvCache cache(c, 32 + 128);
      Stopwatch clock;
      const Generation cached = generate_cached(m.model, m.tokenizer, prompt, cache, greedy_b, opts);
      const double t_cached = clock.seconds();
      clock.restart();
      const Generation naive = generate_naive(m.model, m.tokenizer, prompt, greedy_a, opts);
      const double t_naive = clock.seconds();
      bool same = naive.steps.size() == cached.steps.size();
      for (std::size_t i = 0; same && i < naive.steps.size(); ++i) same = naive.steps[i].token == cached.steps[i].token;
      const double speedup = t_naive / t_cached;
      // The ceiling: each loop's time at this machine's limits. Chapter 01's steps are matrix-
      // matrix work (the whole sequence every time): at best the sgemm rate. Chapter 02's prefill
      // is too; its decode steps read every weight once: at best the read bandwidth.
      const auto flops = [](const Generation& g, std::size_t from) {
        double macs = 0;
        for (std::size_t i = from; i < g.costs.size(); ++i) macs += static_cast<double>(g.costs[i].macs_counted);
        return 2 * macs;
      };
      const double floor_naive = flops(naive, 0) / sgemm_rate;
      const double decode_steps = static_cast<double>(cached.costs.size()) - 1;
      const double floor_cached = (flops(cached, 0) - flops(cached, 1)) / sgemm_rate +
                                  decode_steps * static_cast<double>(m.model.weights().bytes_per_token()) / bw.bytes_per_second;
      const double ceiling = floor_naive / floor_cached;
      Table t(fmt::format("2. 128 tokens after a 32-token prompt, {} threads, one run each", num_threads()),
              {"loop", "time", "tokens/s", "at this machine's limits"});
      t.add_row({"ch01 naive loop", format_seconds(t_naive), fmt::format("{:.2f}", 128 / t_naive), format_seconds(floor_naive)});
      t.add_row({"ch02 KV cache", format_seconds(t_cached), fmt::format("{:.2f}", 128 / t_cached), format_seconds(floor_cached)});
      t.add_note(fmt::format("speedup {:.1f}× (same tokens: {}); target ≥ 10× — {}", speedup, same ? "yes" : "NO", verdict(speedup >= 10)));
      t.add_note(fmt::format("the ceiling on this machine: {:.1f}× — both loops at its limits (chapter 01's {:.1f} TFLOP at the sgemm "
                             "rate of {:.0f} GFLOP/s; chapter 02's prefill likewise and its {:.0f} decode steps at {:.1f} GB/s)",
                             ceiling, flops(naive, 0) / 1e12, sgemm_rate / 1e9, decode_steps, bw.bytes_per_second / 1e9));
      t.add_note("a speed-up above the ceiling means chapter 01 runs further below the machine's limits than chapter 02 does");
      t.print();
      t.append_csv(o.csv_path);
    }

    // 3. Prefill GFLOP/s against a plain sgemm.
    {
      constexpr int64_t kPrompt = 256;
      const std::vector<int32_t> long_prompt = filler(m.tokenizer, kPrompt);
      KvCache cache(c, kPrompt);
      const int prefill_repeats = std::min(repeats, 5);
      const double t_prefill = median_seconds(prefill_repeats, [&] { m.model.forward(long_prompt, 0, cache); });
      const double prefill_flops = 2.0 * static_cast<double>(forward_cost(c, kPrompt, 0, 1).total());

      // lib's sgemm, timed above, and for reference OpenBLAS threading itself with as many threads.
      openblas_set_num_threads(num_threads());
      const double t_openblas = median_seconds(repeats, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, mm, k, 1.0f, x.host<float>(), k, w.host<float>(), k, 0.0f,
                    y.host<float>(), mm);
      });
      openblas_set_num_threads(1);
      Table t(fmt::format("3. Prefill vs a plain sgemm, {} threads, median of {} (prefill) and {} (sgemm)", num_threads(),
                          prefill_repeats, repeats),
              {"computation", "time", "GFLOP/s"});
      t.add_row({fmt::format("prefill of {} tokens (whole forward pass)", kPrompt), format_seconds(t_prefill),
                 fmt::format("{:.1f}", prefill_flops / t_prefill / 1e9)});
      t.add_row({fmt::format("lib's sgemm [{}, {}] × [{}, {}]ᵀ", n, k, mm, k), format_seconds(t_sgemm),
                 fmt::format("{:.1f}", sgemm_flops / t_sgemm / 1e9)});
      t.add_row({fmt::format("OpenBLAS's own threads, same product"), format_seconds(t_openblas),
                 fmt::format("{:.1f}", sgemm_flops / t_openblas / 1e9)});
      t.add_note(fmt::format("prefill reaches {:.0f}% of the plain sgemm's rate (it also reads the {} output matrix for one row,",
                             100.0 * (prefill_flops / t_prefill) / (sgemm_flops / t_sgemm),
                             format_bytes(4.0 * c.vocab_size * c.d_model)));
      t.add_note("and runs norms, RoPE, attention and SiLU between the products).");
      t.print();
      t.append_csv(o.csv_path);
    }

    // 4. Attention's share of a 1 024-token prefill, and of decode steps at longer contexts,
    //    through chapter 03's grouped cache (the cache every later chapter uses). Each pass runs
    //    through a TimedStore, so the attention time is measured inside the same pass.
    {
      constexpr int64_t kPrompt = 1024, kLongest = 4096;
      Table t(fmt::format("4. Attention inside the pass, grouped cache, {} threads, median of {} (prefill) and {} (decode)",
                          num_threads(), std::min(repeats, 3), repeats),
              {"pass", "pass time", "attention", "share", "cache read/s"});
      {
        const std::vector<int32_t> prompt = filler(m.tokenizer, kPrompt);
        GroupedKvCache cache(c, kPrompt);
        TimedStore timed(cache);
        const PassTiming p = time_with_attention(std::min(repeats, 3), timed, [&] {
          cache.clear();
          m.model.forward(prompt, 0, timed);
        });
        const double share = p.attention_seconds / p.pass_seconds;
        t.add_row({fmt::format("prefill of {} tokens", kPrompt), format_seconds(p.pass_seconds), format_seconds(p.attention_seconds),
                   fmt::format("{:.1f}%", 100.0 * share), ""});
        t.add_note(fmt::format("target: prefill of 1 024 tokens, attention ≤ 25% of the pass — {}", verdict(share <= 0.25)));
      }
      {
        const std::vector<int32_t> tokens_long = filler(m.tokenizer, kLongest + 1);
        GroupedKvCache cache(c, kLongest + 1);
        m.model.forward(std::span(tokens_long.data(), kLongest), 0, cache);  // positions 0 … 4 095, once
        TimedStore timed(cache);
        std::vector<std::vector<std::string>> rows;
        for (const int64_t context : {kLongest, int64_t{1024}, int64_t{128}}) {  // longest first: truncate only shortens
          const std::span<const int32_t> next(tokens_long.data() + context, 1);
          const PassTiming p = time_with_attention(repeats, timed, [&] {
            cache.truncate(context);  // forget the step's own position: every repeat decodes at `context`
            m.model.forward(next, context, timed);
          });
          rows.push_back({fmt::format("decode step at context {}", context), format_seconds(p.pass_seconds),
                          format_seconds(p.attention_seconds), fmt::format("{:.1f}%", 100.0 * p.attention_seconds / p.pass_seconds),
                          fmt::format("{:.2f} GB/s", cache_bytes(c, context, c.kv_width()) / p.attention_seconds / 1e9)});
        }
        for (auto row = rows.rbegin(); row != rows.rend(); ++row) t.add_row(*row);
      }
      t.add_note("attention: the seconds spent in the cache's attend (the step's k, v rows written, then ops::attention), summed");
      t.add_note("over the 30 layers of the same pass; cache read/s: the keys and values attention reads (all layers), per second of it.");
      t.print();
      t.append_csv(o.csv_path);
    }
  });
}
