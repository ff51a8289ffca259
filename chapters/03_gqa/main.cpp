// ch03_gqa — grouped-query attention: store each key/value head once.
//
//   ch03_gqa                        the demo: generate with the grouped cache (checked against
//                                   chapter 02's cache), the cache per token, the multi-query
//                                   experiment on held-out text, the table for well-known shapes
//   ch03_gqa --eval-tokens 4096     evaluate on more of the held-out text
//   ch03_gqa --no-eval              skip the multi-query experiment (no text needed)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/text_streamer.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "cached_generate.hpp"
#include "evaluation.hpp"
#include "grouped_kv_cache.hpp"
#include "kv_cache.hpp"
#include "measure/table.hpp"
#include "multi_query.hpp"
#include "tensor/ops.hpp"

using namespace infer;

namespace {

constexpr double kKiB = 1024.0;

std::string kib(double bytes) { return fmt::format("{:.1f}", bytes / kKiB); }
std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

// --- 1. the demo: stream text generated with the grouped cache, then rerun with chapter 02's ---

void run_demo(LoadedModel& m, const CommonOptions& o, RunRecord& record) {
  const LlamaConfig& c = m.model.config();
  record.prompt_ids = encode_prompt(m, o);
  const int64_t capacity = static_cast<int64_t>(record.prompt_ids.size()) + o.n_predict;
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

// --- 2. this model's cache per token, measured from real allocations ---

void print_cache_table(const LlamaConfig& c, const CommonOptions& o, nlohmann::json& figures) {
  constexpr int64_t capacity = 1024;  // allocated, not touched: the bytes are what bytes() reports
  const KvCache full(c, capacity);
  const GroupedKvCache grouped(c, capacity);
  struct Row {
    std::string name;
    int heads;
    std::size_t measured;
  };
  const std::vector<Row> rows = {{"MHA layout (chapter 02 KvCache)", c.n_heads, full.bytes()},
                                 {"grouped (chapter 03 GroupedKvCache)", c.n_kv_heads, grouped.bytes()}};
  Table table(fmt::format("K/V cache per token of this model ({} layers, {} query heads, {} key/value heads of {})",
                          c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim),
              {"layout", "heads stored / layer", "fp32 B/token", "fp16 B/token", "fp16 KiB/token",
               fmt::format("fp16 at {} tokens", c.context_length), "vs MHA"});
  for (const Row& r : rows) {
    const auto per_token = static_cast<double>(r.measured) / capacity;
    const double fp16 = per_token / 2;
    if (r.measured / capacity != kv_bytes_per_token(c.n_layers, r.heads, c.head_dim, 4))
      throw std::logic_error("measured cache bytes differ from the formula");
    table.add_row({r.name, std::to_string(r.heads), fmt::format("{:.0f}", per_token), fmt::format("{:.0f}", fp16),
                   kib(fp16), format_bytes(fp16 * c.context_length),
                   fmt::format("{:.2f}×", static_cast<double>(r.measured) / static_cast<double>(full.bytes()))});
    figures["cache_per_token"].push_back({{"layout", r.name}, {"heads_stored", r.heads},
                                          {"fp32_bytes_per_token", per_token}, {"fp16_bytes_per_token", fp16}});
  }
  table.add_note(fmt::format("fp32: bytes() of caches allocated for {} tokens, divided by {}; they equal 2 × layers × "
                             "heads × D × 4 B. fp16: the same layout at 2 B per element (our caches are fp32).",
                             capacity, capacity));
  table.add_note(fmt::format("The grouped cache is exactly {}/{} = {}× smaller and produces the same tokens (above, "
                             "and tests/stage/test_stage_03.cpp).", c.n_heads, c.n_kv_heads, c.n_heads / c.n_kv_heads));
  table.print();
  table.append_csv(o.csv_path);
  std::fflush(stdout);  // before the evaluation's notes and progress bar on stderr
}

// --- 3. the multi-query experiment: pool the 3 key/value heads into 1, measure the loss ---

void run_multi_query(LoadedModel& m, const CommonOptions& o, int64_t eval_tokens, int64_t window,
                     nlohmann::json& figures) {
  const std::string text = held_out_text(read_eval_text());
  std::vector<int32_t> tokens = m.tokenizer.encode(text, /*parse_special=*/false);
  const auto available = static_cast<int64_t>(tokens.size());
  if (eval_tokens > available) {
    fmt::print(stderr, "note: the held-out text has {} tokens; evaluating all of them\n", available);
    eval_tokens = available;
  }
  tokens.resize(static_cast<std::size_t>(eval_tokens));

  Llama mqa = pool_kv_heads(m.model, 1);
  EvalOptions options{.window = window, .chunk = 128, .progress_label = "original model"};
  const TextEvaluation base = evaluate_text(m.model, tokens, options);
  options.progress_label = "multi-query";
  const TextEvaluation pooled = evaluate_text(mqa, tokens, options);
  const Agreement agree = greedy_agreement(base, pooled);

  Table table(fmt::format("Multi-query experiment: key/value heads mean-pooled into one, no retraining "
                          "(held-out text: the book of Ruth, first {} tokens, {} windows of up to {})",
                          tokens.size(), base.windows, window),
              {"model", "kv heads", "cache fp32 B/token", "cache fp16 KiB/token", "perplexity", "NLL (nats/token)",
               "top-1 = next token", "greedy agreement with original", "eval time"});
  struct Row {
    std::string name;
    const Llama* model;
    const TextEvaluation* eval;
  };
  for (const Row& r : {Row{"original (GQA)", &m.model, &base}, Row{"pooled (MQA)", &mqa, &pooled}}) {
    const LlamaConfig& c = r.model->config();
    const GroupedKvCache cache(c, 1024);
    const double per_token = static_cast<double>(cache.bytes()) / 1024.0;
    const Agreement a = greedy_agreement(base, *r.eval);
    table.add_row({r.name, std::to_string(c.n_kv_heads), fmt::format("{:.0f}", per_token), kib(per_token / 2),
                   fmt::format("{:.2f}", r.eval->perplexity()), fmt::format("{:.4f}", r.eval->mean_nll()),
                   percent(r.eval->greedy_accuracy(tokens)),
                   fmt::format("{} ({} of {})", percent(a.rate()), a.agreeing, a.positions),
                   format_seconds(r.eval->seconds)});
    figures["multi_query"].push_back({{"model", r.name}, {"kv_heads", c.n_kv_heads},
                                      {"fp32_bytes_per_token", per_token}, {"perplexity", r.eval->perplexity()},
                                      {"mean_nll", r.eval->mean_nll()}, {"positions", r.eval->count()},
                                      {"greedy_accuracy", r.eval->greedy_accuracy(tokens)},
                                      {"agreement_with_original", a.rate()}, {"seconds", r.eval->seconds}});
  }
  table.add_note(fmt::format("Perplexity = exp(mean NLL) over {} predicted positions; the first token of each "
                             "window is context only. \"top-1 = next token\": the model's most likely token is the "
                             "text's actual next token.", base.count()));
  table.add_note(fmt::format("The pooled cache is {}× smaller again; the price is the perplexity and agreement above. "
                             "The GQA paper recovers most of it by uptraining (~5% of pre-training compute).",
                             m.model.config().n_kv_heads));
  table.print();
  table.append_csv(o.csv_path);
  figures["multi_query_agreement"] = {{"positions", agree.positions}, {"agreeing", agree.agreeing}};
}

// --- 4. the formula for well-known shapes ---

struct ModelShape {
  std::string name;
  LlamaConfig config;
};

LlamaConfig with_kv_heads(LlamaConfig c, int kv_heads) {
  c.n_kv_heads = kv_heads;
  return c;
}

void print_shape_tables(const LlamaConfig& own, const CommonOptions& o, int64_t user_tokens, nlohmann::json& figures) {
  const LlamaConfig mistral = LlamaConfig::from_shape(32, 4096, 32, 8, 14336, 32000, 32768);
  const LlamaConfig llama13 = LlamaConfig::from_shape(40, 5120, 40, 40, 13824, 32000, 4096);
  const LlamaConfig llama70 = LlamaConfig::from_shape(80, 8192, 64, 8, 28672, 32000, 4096);
  const std::vector<ModelShape> shapes = {
      {"SmolLM2-135M (this model), GQA", own},
      {"  the same with MHA", with_kv_heads(own, own.n_heads)},
      {"7B, GQA (Mistral-7B shape)", mistral},
      {"  the same with MHA", with_kv_heads(mistral, mistral.n_heads)},
      {"13B, MHA (Llama-2-13B shape)", llama13},
      {"  the same with 8 kv heads", with_kv_heads(llama13, 8)},
      {"70B, GQA (Llama-2-70B shape)", llama70},
      {"  the same with MHA", with_kv_heads(llama70, llama70.n_heads)},
  };
  const std::vector<double> memories_gb = {24, 80, 640};

  Table cache_table("K/V cache per token from the formula 2 × layers × kv heads × D × 2 B (fp16), against the fp16 weights",
                    {"model", "layers", "kv heads × D", "params", "fp16 weights", "KiB/token", "MB/token",
                     "cache at 4096 tokens", "tokens where cache = weights"});
  std::vector<std::string> users_headers = {"model", fmt::format("cache of one {}-token user", user_tokens)};
  for (double gb : memories_gb) users_headers.push_back(fmt::format("users in {:g} GB", gb));
  Table users_table(fmt::format("How many users of {} tokens fit next to the fp16 weights (cache fp16, whole "
                                "memory for weights + caches)", user_tokens),
                    users_headers);
  for (const ModelShape& s : shapes) {
    const LlamaConfig& c = s.config;
    const double params = static_cast<double>(c.parameter_count());
    const double weights = params * 2;
    const auto per_token = static_cast<double>(kv_bytes_per_token(c.n_layers, c.n_kv_heads, c.head_dim, 2));
    const double crossover = weights / per_token;
    cache_table.add_row({s.name, std::to_string(c.n_layers), fmt::format("{} × {}", c.n_kv_heads, c.head_dim),
                         fmt::format("{:.2f} B", params / 1e9), format_bytes(weights), fmt::format("{:.1f}", per_token / kKiB),
                         fmt::format("{:.3f}", per_token / 1e6), format_bytes(per_token * 4096),
                         format_count(std::floor(crossover))});
    const double per_user = per_token * static_cast<double>(user_tokens);
    std::vector<std::string> row = {s.name, format_bytes(per_user)};
    nlohmann::json users = nlohmann::json::array();
    for (double gb : memories_gb) {
      const double free = gb * 1e9 - weights;
      const double n = free < 0 ? -1 : std::floor(free / per_user);
      row.push_back(n < 0 ? "weights do not fit" : format_count(n));
      users.push_back({{"memory_gb", gb}, {"users", n}});
    }
    users_table.add_row(row);
    figures["shapes"].push_back({{"model", s.name}, {"layers", c.n_layers}, {"kv_heads", c.n_kv_heads},
                                 {"head_dim", c.head_dim}, {"params", params}, {"fp16_weight_bytes", weights},
                                 {"fp16_cache_bytes_per_token", per_token}, {"crossover_tokens", crossover},
                                 {"user_tokens", user_tokens}, {"users", users}});
  }
  cache_table.add_note("params from the shape (LlamaConfig::parameter_count: d, layers, heads, MLP width, vocabulary "
                       "32000, untied embeddings; SmolLM2 as loaded, tied): Mistral-7B d=4096 MLP 14336, Llama-2-13B "
                       "d=5120 MLP 13824, Llama-2-70B d=8192 MLP 28672. \"The same with MHA\" keeps every width and "
                       "gives wk/wv one head per query head, so it has more parameters.");
  cache_table.add_note("KiB = 1024 B; MB, GB = 10^6, 10^9 B. \"tokens where cache = weights\": beyond this many tokens "
                       "(summed over all users) the cache is larger than the model itself.");
  users_table.add_note("users = floor((memory − fp16 weights) / cache of one user); activations and fragmentation "
                       "ignored, so these are upper bounds. 640 GB = a node of 8 × 80 GB.");
  cache_table.print();
  cache_table.append_csv(o.csv_path);
  users_table.print();
  users_table.append_csv(o.csv_path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 03: grouped-query attention — each key/value head stored once"};
  CommonOptions o;
  o.prompt = "The three most important ideas in computer science are";
  o.n_predict = 32;
  int64_t eval_tokens = 2048, window = 512, user_tokens = 4096;
  bool no_eval = false;
  add_common_options(app, o);
  app.add_option("--eval-tokens", eval_tokens, "tokens of held-out text for the multi-query experiment")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--window", window, "tokens per evaluation window (each starts with an empty cache)")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--user-tokens", user_tokens, "context of one user in the capacity table")
      ->check(whole_number(1, int64_t{1} << 40))->capture_default_str();
  app.add_flag("--no-eval", no_eval, "skip the multi-query experiment (needs data/fetch_eval_text.sh)");

  return run_main(app, argc, argv, [&] {
    if (no_eval) refuse_flags(app, "--no-eval", {"--eval-tokens", "--window"});
    LoadedModel m = load_model(o);
    if (window > m.model.config().context_length)
      throw UsageError(fmt::format("--window {} exceeds the context length {}", window, m.model.config().context_length));
    RunRecord record = new_record("ch03_gqa", o);
    run_demo(m, o, record);
    print_cache_table(m.model.config(), o, record.figures);
    if (!no_eval) run_multi_query(m, o, eval_tokens, window, record.figures);
    print_shape_tables(m.model.config(), o, user_tokens, record.figures);
    save_record(record, o, &m.tokenizer);
  });
}
