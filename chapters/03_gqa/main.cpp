// ch03_gqa — grouped-query attention: store each key/value head once.
//
//   ch03_gqa                        the demo: generate with the grouped cache (checked against
//                                   chapter 02's cache), then the tables (tables/, in this order):
//                                   2 the cache per token, 3 the multi-query experiment and
//                                   4 a sliding window on held-out text, 5–6 the formula for
//                                   well-known shapes, 7 published shapes beyond GQA, 8 latent,
//                                   state-space and hybrid caches, 9 decode time against H_kv,
//                                   10 decode time against the cache's layout
//   ch03_gqa --eval-tokens 3267     evaluate on more of the held-out text
//   ch03_gqa --sliding-windows 512  the sliding-window experiment at one window
//   ch03_gqa --no-eval              skip both experiments (no text needed)
//   ch03_gqa --sweep-contexts 1024  tables 9 and 10 at other cache lengths; --no-sweep skips both
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/text_streamer.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "02_kv_cache/cached_generate.hpp"
#include "architecture_caches.hpp"
#include "cache_layout.hpp"
#include "gqa_tables.hpp"
#include "grouped_kv_cache.hpp"
#include "02_kv_cache/kv_cache.hpp"
#include "kv_head_sweep.hpp"
#include "measure/table.hpp"
#include "tensor/ops.hpp"

using namespace infer;
using namespace infer::gqa;

namespace {

// --- 1. the demo: stream text generated with the grouped cache, then rerun with chapter 02's ---

void run_demo(LoadedModel& m, const CommonOptions& o, RunRecord& record) {
  const LlamaConfig& c = m.model.config();
  record.prompt_ids = encode_prompt(m, o);
  const int64_t capacity = std::ssize(record.prompt_ids) + o.n_predict;
  const GenerateOptions options{.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5};

  GroupedKvCache grouped(c, capacity, m.model.device());
  Sampler sampler(o.sampling);
  TextStreamer stream(m.tokenizer, record.text);
  std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
  std::fflush(stdout);
  const Generation gen = generate_cached(m.model, m.tokenizer, record.prompt_ids, grouped, sampler, options,
                                         std::ref(stream));
  stream.finish();
  record.steps = gen.steps;

  // The same generation with chapter 02's cache (same seed): the tokens must not change.
  KvCache full(c, capacity, m.model.device());
  Sampler sampler02(o.sampling);
  const Generation gen02 = generate_cached(m.model, m.tokenizer, record.prompt_ids, full, sampler02, options);
  std::size_t same = 0;
  while (same < gen.steps.size() && same < gen02.steps.size() && gen.steps[same].token == gen02.steps[same].token) ++same;
  const bool identical = same == gen.steps.size() && same == gen02.steps.size();
  double max_diff = 0;
  for (std::size_t i = 0; i < same; ++i)
    for (std::size_t j = 0; j < gen.steps[i].top.size() && j < gen02.steps[i].top.size(); ++j)
      if (gen.steps[i].top[j].first == gen02.steps[i].top[j].first)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(gen.steps[i].top[j].second - gen02.steps[i].top[j].second)));
  fmt::print("{} tokens with GroupedKvCache ({} of cache), {} with chapter 02's KvCache ({}): {}, "
             "largest difference of the top-5 logits {:g}\n\n",
             gen.steps.size(), format_bytes(static_cast<double>(grouped.bytes())), gen02.steps.size(),
             format_bytes(static_cast<double>(full.bytes())),
             identical ? "identical tokens" : fmt::format("FIRST DIFFERENCE AT STEP {}", same + 1), max_diff);
  std::fflush(stdout);
  record.figures["demo"] = {{"tokens", gen.steps.size()},
                            {"identical_to_chapter_02", identical},
                            {"max_top_logit_diff", max_diff},
                            {"grouped_cache_bytes", grouped.bytes()},
                            {"chapter_02_cache_bytes", full.bytes()}};
  if (!identical) throw std::runtime_error("the grouped cache changed the generated tokens");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 03: grouped-query attention — each key/value head stored once"};
  CommonOptions o;
  o.prompt = "The three most important ideas in computer science are";
  o.n_predict = 32;
  int64_t eval_tokens = 2048, window = 512, user_tokens = 4096;
  std::vector<int64_t> sliding_windows = {256, 512, 1024}, sweep_contexts = {512, 2048, 8192};
  bool no_eval = false, no_sweep = false;
  add_common_options(app, o);
  app.add_option("--eval-tokens", eval_tokens, "tokens of held-out text for the multi-query and sliding-window experiments")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--window", window, "tokens per evaluation window (each starts with an empty cache)")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--user-tokens", user_tokens, "context of one user in the capacity table")
      ->check(whole_number(1, int64_t{1} << 40))->capture_default_str();
  app.add_option("--sliding-windows", sliding_windows, "attention windows of the sliding-window experiment (comma-separated)")
      ->delimiter(',')->check(whole_number(1, int64_t{1} << 30))->capture_default_str();
  app.add_flag("--no-eval", no_eval, "skip the multi-query and sliding-window experiments (needs data/fetch_eval_text.sh)");
  app.add_option("--sweep-contexts", sweep_contexts, "positions a decode step reads in tables 9 and 10, the sweeps over key/value "
                 "heads and cache layouts (comma-separated; about 15 s on 2 cores at the default)")
      ->delimiter(',')->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_flag("--no-sweep", no_sweep, "skip tables 9 and 10, the decode-time sweeps");

  return run_main(app, argc, argv, [&] {
    if (no_eval) refuse_flags(app, "--no-eval", {"--eval-tokens", "--window", "--sliding-windows"});
    if (no_sweep) refuse_flags(app, "--no-sweep", {"--sweep-contexts"});
    const int context = read_model_config(o).context_length;  // from the metadata, before the weights load
    if (window > context) throw UsageError(fmt::format("--window {} exceeds the context length {}", window, context));
    for (int64_t n : sweep_contexts)
      if (n > context) throw UsageError(fmt::format("--sweep-contexts {} exceeds the context length {}", n, context));
    LoadedModel m = load_model(o);
    RunRecord record = new_record("ch03_gqa", o);
    run_demo(m, o, record);
    print_cache_table(m.model.config(), o, record.figures);
    std::vector<SlidingResult> sliding;
    if (!no_eval) {
      run_multi_query(m, o, eval_tokens, window, record.figures);
      if (!sliding_windows.empty()) sliding = sliding_window_table(m, o, eval_tokens, sliding_windows, record.figures);
    }
    print_shape_tables(m.model.config(), o, user_tokens, record.figures);
    const std::string name = std::filesystem::path(o.model_path).stem().string();
    beyond_gqa_table(m.model.config(), name, o, sliding, record.figures);
    architecture_cache_table(m.model.config(), name, o, record.figures);
    if (!no_sweep) {
      kv_head_sweep_table(m.model, o, sweep_contexts, record.figures);
      cache_layout_table(m.model, o, sweep_contexts, record.figures);
    }
    save_record(record, o, &m.tokenizer);
  });
}
