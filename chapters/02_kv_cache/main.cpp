// ch02_kv_cache — generate with a KV cache: prefill the prompt once, then decode one token per step.
//
//   ch02_kv_cache                          the demo (chapter 01's prompt, 32 tokens), then the tables
//   ch02_kv_cache -p "..." -n 64 --chat    your prompt, in the chat template
//   ch02_kv_cache --skip-tables --json b.json   just generate (compare with stage_diff)
//   ch02_kv_cache --csv t.csv --plot p.svg --scores-plot s.svg   tables as CSV, the plots elsewhere
//                                          (default: here, ch02_prefill_vs_decode.svg, ch02_score_bytes.svg)
//   ch02_kv_cache --growth-tokens 2048     the concatenation study over a longer generation
//   ch02_kv_cache --tiled-tokens 4096      table 11 without its longest prefill (2.4 GB of scores)
//
// The tables (tables/), in the order printed:
//   1  the demo run: time to first token and tokens/s, beside chapter 01's loop on the same generation
//   2  one attention head, one step computed both ways (recompute n×n vs 1×n against a cache)
//   3  multiply-accumulates to generate T tokens from cold start, recompute vs cache
//   4  the same in prompt (P) and generated (G) terms: O(P²G + PG² + G³) against O(P² + PG)
//   5  prefill: time per token for prompts of P tokens
//   6  decode: time per step with C tokens in the cache
//   7  prompt-heavy vs answer-heavy requests of the same length
//   8  peak memory: the course's naive and cached loops beside chapters 01 and 02
//   9  cache bytes: the real allocations against 2 × layers × heads × head_dim × 4 B per token
//   10 growing the cache by concatenation vs the preallocated cache
//   11 prefill attention in tiles with an online softmax (FlashAttention): score memory and time
//   12 the tiled kernel's tile sizes against lib's attention
//   13 one decode query over a long cache, split into chunks and merged (FlashDecoding)
#include <cstdio>

#include <fmt/format.h>

#include "app/text_streamer.hpp"
#include "app/run_record.hpp"
#include "cached_generate.hpp"
#include "kv_cache.hpp"
#include "measure/bandwidth.hpp"
#include "measure/progress.hpp"
#include "memory_tables.hpp"
#include "phases.hpp"
#include "recompute.hpp"
#include "tensor/memory.hpp"
#include "tensor/ops.hpp"
#include "tiled_attention.hpp"

using namespace infer;
using namespace infer::kv;

int main(int argc, char** argv) {
  CLI::App app{"Chapter 02: the KV cache — prefill the prompt once, then decode one token per step against the cache"};
  CommonOptions o;
  o.prompt = "The three most important ideas in computer science are";
  o.n_predict = 32;
  bool skip_tables = false;
  int repeats = 5;
  int64_t workload_tokens = 128, growth_tokens = 512, tiled_tokens = 8192;
  std::string plot_path = "ch02_prefill_vs_decode.svg";  // in the working directory, never over docs/
  std::string scores_plot_path = "ch02_score_bytes.svg";
  add_common_options(app, o);
  app.add_flag("--skip-tables", skip_tables, "only generate (no comparison with chapter 01, no sweeps)");
  app.add_option("--repeats", repeats, "timed repeats per measurement (the median is reported)")
      ->check(whole_number(1))->capture_default_str();
  app.add_option("--plot", plot_path, "SVG file for the prefill-vs-decode plot (empty: none)")->capture_default_str();
  app.add_option("--scores-plot", scores_plot_path, "SVG file for the score-matrix bytes plot (empty: none)")->capture_default_str();
  app.add_option("--workload-tokens", workload_tokens, "tokens of each request in the prompt-heavy vs answer-heavy table")
      ->check(whole_number(16, 4096))->capture_default_str();
  app.add_option("--growth-tokens", growth_tokens, "decode steps of the concatenation vs preallocation study")
      ->check(whole_number(8, 1 << 30))->capture_default_str();
  app.add_option("--tiled-tokens", tiled_tokens, "longest prefill of table 11 (256, 1024, 4096, 8192 up to this)")
      ->check(whole_number(256, 8192))->capture_default_str();

  return run_main(app, argc, argv, [&] {
    if (skip_tables)
      refuse_flags(app, "--skip-tables", {"--csv", "--plot", "--scores-plot", "--repeats", "--workload-tokens", "--growth-tokens", "--tiled-tokens"});
    if (!skip_tables) {
      check_output_path(plot_path, "--plot");
      check_output_path(scores_plot_path, "--scores-plot");
      const LlamaConfig shape = read_model_config(o);
      if (growth_tokens > shape.context_length)
        throw UsageError(fmt::format("--growth-tokens {} exceeds the context length {}", growth_tokens, shape.context_length));
      if (workload_tokens > shape.context_length)
        throw UsageError(fmt::format("--workload-tokens {} exceeds the context length {}", workload_tokens, shape.context_length));
    }
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
      KvCache cache(m.model.config(), std::ssize(record.prompt_ids) + o.n_predict, dev);
      cached.gen = generate_cached(m.model, m.tokenizer, record.prompt_ids, cache, sampler, gen_options, std::ref(stream));
      cached.peak_bytes = memory_stats(dev).peak_bytes - before;
      cached.cache_bytes = static_cast<int64_t>(cache.bytes());
      stream.finish();
    }
    const Generation& g = cached.gen;
    double decode = 0;
    for (std::size_t i = 1; i < g.steps.size(); ++i) decode += g.steps[i].seconds;
    fmt::print("{} tokens: the {}-token prompt in {:.1f} ms (time to first token), then {:.1f} tokens/s ({} of cache)\n\n",
               g.steps.size(), record.prompt_ids.size(), g.steps.front().seconds * 1e3,
               g.steps.size() > 1 ? static_cast<double>(g.steps.size() - 1) / decode : 0.0,
               format_bytes(static_cast<double>(cached.cache_bytes)));
    record.steps = g.steps;
    if (skip_tables) {
      save_record(record, o, &m.tokenizer);
      return;
    }

    const BandwidthResult bw = measure_read_bandwidth();
    record.figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second}};
    Context cx{{m, o, record.figures, machine_line(bw)}, repeats, bw.bytes_per_second};

    // Chapter 01's loop on the same generation, for tables 1, 4 and 8.
    LoopRun naive;
    {
      Sampler sampler(o.sampling);
      ProgressBar bar("chapter 01's loop on the same generation", std::ssize(g.steps));
      const int64_t before = memory_stats(dev).current_bytes;
      reset_peak_memory(dev);
      naive.gen = generate_naive(m.model, m.tokenizer, record.prompt_ids, sampler, gen_options, [&](const StepRecord&) { bar.advance(); });
      naive.peak_bytes = memory_stats(dev).peak_bytes - before;
    }
    demo_table(cx, record.prompt_ids.size(), cached, naive);
    attention_table(cx, scores_plot_path);
    macs_table(cx);
    prompt_generated_table(cx, record.prompt_ids.size(), cached, naive);
    prefill_decode_tables(cx, plot_path);
    workload_table(cx, workload_tokens);
    peak_memory_table(cx, record.prompt_ids, cached, naive);
    cache_bytes_table(cx);
    growth_table(cx, growth_tokens);
    tiled_attention_tables(cx, tiled_tokens);
    save_record(record, o, &m.tokenizer);
  });
}
