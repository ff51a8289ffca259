#include "gqa_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "cache_shapes.hpp"
#include "eval/evaluation.hpp"
#include "grouped_kv_cache.hpp"
#include "02_kv_cache/kv_cache.hpp"
#include "measure/table.hpp"
#include "multi_query.hpp"
#include "sliding_window_cache.hpp"

namespace infer::gqa {
namespace {

constexpr double kKiB = 1024.0;

// The first `count` tokens of the held-out text (all of them, with a note, if it has fewer).
std::vector<int32_t> held_out_tokens(const LoadedModel& m, int64_t count) {
  std::vector<int32_t> tokens = m.tokenizer.encode(held_out_text(read_eval_text()), /*parse_special=*/false);
  const auto available = std::ssize(tokens);
  if (count > available) {
    fmt::print(stderr, "note: the held-out text has {} tokens; evaluating all of them\n", available);
    count = available;
  }
  tokens.resize(count);
  return tokens;
}

struct ModelShape {
  std::string name;
  LlamaConfig config;
};

LlamaConfig with_kv_heads(LlamaConfig c, int kv_heads) {
  c.n_kv_heads = kv_heads;
  return c;
}

}  // namespace

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
  Table table(fmt::format("2. K/V cache per token of this model ({} layers, {} query heads, {} key/value heads of {})",
                          c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim),
              {"layout", "heads stored / layer", "fp32 B/token", "fp16 B/token", "fp16 KiB/token",
               fmt::format("fp16 at {} tokens", c.context_length), "vs MHA"});
  for (const Row& r : rows) {
    const auto per_token = static_cast<double>(r.measured) / capacity;
    const double fp16 = per_token / 2;
    if (r.measured / capacity != c.kv_bytes_per_token(4, r.heads))
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
  table.emit(o.csv_path);
  std::fflush(stdout);  // before the evaluation's notes and progress bar on stderr
}

// --- 3. the multi-query experiment: pool the 3 key/value heads into 1, measure the loss ---

void run_multi_query(LoadedModel& m, const CommonOptions& o, int64_t eval_tokens, int64_t window,
                     nlohmann::json& figures) {
  const std::vector<int32_t> tokens = held_out_tokens(m, eval_tokens);

  Llama mqa = pool_kv_heads(m.model, 1);
  EvalOptions options{.window = window, .chunk = 128, .progress_label = "original model"};
  const TextEvaluation base = evaluate_text<GroupedKvCache>(m.model, tokens, options);
  options.progress_label = "multi-query";
  const TextEvaluation pooled = evaluate_text<GroupedKvCache>(mqa, tokens, options);
  const Agreement agree = greedy_agreement(base, pooled);

  Table table(fmt::format("3. Multi-query experiment: key/value heads mean-pooled into one, no retraining "
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
                   cell::percent(r.eval->greedy_accuracy(tokens)),
                   fmt::format("{} ({} of {})", cell::percent(a.rate()), a.agreeing, a.positions),
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
  table.emit(o.csv_path);
  figures["multi_query_agreement"] = {{"positions", agree.positions}, {"agreeing", agree.agreeing}};
}

// --- 5 and 6. the formula for well-known shapes ---

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

  Table cache_table("5. K/V cache per token from the formula 2 × layers × kv heads × D × 2 B (fp16), against the fp16 weights",
                    {"model", "layers", "kv heads × D", "params", "fp16 weights", "KiB/token", "MB/token",
                     "cache at 4096 tokens", "tokens where cache = weights"});
  std::vector<std::string> users_headers = {"model", fmt::format("cache of one {}-token user", user_tokens)};
  for (double gb : memories_gb) users_headers.push_back(fmt::format("users in {:g} GB", gb));
  Table users_table(fmt::format("6. How many users of {} tokens fit next to the fp16 weights (cache fp16, whole "
                                "memory for weights + caches)", user_tokens),
                    users_headers);
  for (const ModelShape& s : shapes) {
    const LlamaConfig& c = s.config;
    const double params = static_cast<double>(c.parameter_count());
    const double weights = params * 2;
    const auto per_token = static_cast<double>(c.kv_bytes_per_token(2));
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
  cache_table.emit(o.csv_path);
  users_table.emit(o.csv_path);
}

// --- 4. a sliding window imposed on this model, measured on the held-out text ---

std::vector<SlidingResult> sliding_window_table(LoadedModel& m, const CommonOptions& o, int64_t eval_tokens,
                                                const std::vector<int64_t>& windows, nlohmann::json& figures) {
  const LlamaConfig& c = m.model.config();
  const std::vector<int32_t> tokens = held_out_tokens(m, std::min<int64_t>(eval_tokens, c.context_length));
  const auto T = std::ssize(tokens);
  constexpr int64_t kChunk = 128;
  constexpr int kGlobalEvery = 6;  // Gemma 3's pattern: 5 local layers, then a global one
  const EvalOptions one_window{.window = T, .chunk = kChunk, .progress_label = fmt::format("full cache, {} tokens", T)};
  const TextEvaluation full = evaluate_text<GroupedKvCache>(m.model, tokens, one_window);
  const GroupedKvCache full_cache(c, T);

  Table table(fmt::format("4. Sliding-window attention imposed on this model, no retraining (held-out text: the book of Ruth, first {} "
                          "tokens in one window; each position attends to the last W)", T),
              {"cache", "slots per layer", "cache bytes (fp32)", "perplexity, all positions", "positions the window cuts",
               "perplexity there", "full cache there", "greedy agreement with full there", "eval time"});
  table.add_row({"full (every position)", std::to_string(T), format_bytes(static_cast<double>(full_cache.bytes())),
                 fmt::format("{:.2f}", full.perplexity()), "0", "", "", "", format_seconds(full.seconds)});
  // Every window alone, then the smallest one with every 6th layer global.
  std::vector<std::pair<int64_t, int>> variants;
  for (int64_t W : windows) {
    if (W >= T - 1)
      table.add_note(fmt::format("W = {}: no position of a {}-token window looks back that far, nothing to measure.", W, T));
    else
      variants.emplace_back(W, 0);
  }
  if (!variants.empty()) variants.emplace_back(std::min_element(variants.begin(), variants.end())->first, kGlobalEvery);
  std::vector<SlidingResult> results;
  for (const auto& [W, every] : variants) {
    std::vector<int64_t> layer_windows(c.n_layers, W);
    for (int l = 0; every > 0 && l < c.n_layers; ++l)
      if ((l + 1) % every == 0) layer_windows[l] = 0;  // global
    SlidingWindowCache cache(c, layer_windows, kChunk, T, m.model.device());
    EvalOptions options = one_window;
    options.progress_label = every > 0 ? fmt::format("local/global, W = {}", W) : fmt::format("sliding window {}", W);
    const TextEvaluation ev = evaluate_text(m.model, tokens, cache, [&] { cache.clear(); }, options);
    // The positions whose query (one before the predicted token) sits at W or later see fewer
    // positions than with the full cache; before them the two evaluations are the same.
    double nll = 0, nll_full = 0;
    int64_t cut = 0, agree = 0;
    for (std::size_t i = 0; i < ev.nll.size(); ++i) {
      if (ev.positions[i] - 1 < W) continue;
      ++cut;
      nll += ev.nll[i];
      nll_full += full.nll[i];
      agree += ev.greedy[i] == full.greedy[i] ? 1 : 0;
    }
    const SlidingResult r{W, every, std::exp(nll / static_cast<double>(cut)), std::exp(nll_full / static_cast<double>(cut)),
                          static_cast<double>(agree) / static_cast<double>(cut)};
    results.push_back(r);
    const int global = every > 0 ? global_layers(c.n_layers, every) : 0;
    table.add_row({every > 0 ? fmt::format("local/global {}:1, W = {}", every - 1, W) : fmt::format("sliding, W = {}", W),
                   every > 0 ? fmt::format("{} ({} layers), {} ({})", cache.slots(0), c.n_layers - global, T, global)
                             : std::to_string(cache.slots(0)),
                   format_bytes(static_cast<double>(cache.bytes())), fmt::format("{:.2f}", ev.perplexity()), std::to_string(cut),
                   fmt::format("{:.2f}", r.perplexity), fmt::format("{:.2f}", r.full_perplexity),
                   fmt::format("{} ({} of {})", cell::percent(r.agreement), agree, cut), format_seconds(ev.seconds)});
    figures["sliding_window"].push_back({{"window", W}, {"global_every", every}, {"bytes", cache.bytes()},
                                         {"perplexity", ev.perplexity()}, {"cut_positions", cut}, {"cut_perplexity", r.perplexity},
                                         {"cut_full_perplexity", r.full_perplexity}, {"cut_agreement", r.agreement},
                                         {"seconds", ev.seconds}});
  }
  figures["sliding_window_full"] = {{"tokens", T}, {"perplexity", full.perplexity()}, {"bytes", full_cache.bytes()}};
  table.add_note(fmt::format("slots: W − 1 + {} per local layer, so that a {}-token prefill chunk's first query still sees W positions (a "
                             "decode-time cache needs only W); a global layer holds every position. A local layer's cache stops "
                             "growing at its window, the full cache grows with the text.", kChunk, kChunk));
  table.add_note("\"there\": over the predicted positions whose query sits at position W or later, the only ones the window changes (before "
                 "them both caches hold the same keys and compute the same numbers).");
  table.add_note(fmt::format("local/global: layers {}, {}, … ({} of {}) attend to every position, the others to the last W.", kGlobalEvery,
                             2 * kGlobalEvery, c.n_layers / kGlobalEvery, c.n_layers));
  table.emit(o.csv_path);
  return results;
}

// --- 7. beyond GQA: published shapes at long contexts ---

void beyond_gqa_table(const LlamaConfig& own, const std::string& own_name, const CommonOptions& o,
                      const std::vector<SlidingResult>& measured, nlohmann::json& figures) {
  std::vector<CacheShape> shapes = published_cache_shapes();
  shapes.push_back(own_shape(own, own_name));
  std::vector<std::string> costs(shapes.size());
  for (const SlidingResult& r : measured) {
    shapes.push_back(own_shape(own, own_name, r.window, r.global_every));
    costs.push_back(fmt::format("table 4: perplexity {:.2f} where it cuts (full: {:.2f})", r.perplexity, r.full_perplexity));
  }
  const std::vector<int64_t> lengths{4096, 32768, 131072};
  const int64_t mha = shapes.front().bytes_per_token();
  Table table("7. Beyond GQA: the K/V cache of published shapes, 2-byte elements, computed from each configuration",
              {"idea", "model", "configuration", "KiB/token", "at 4k tokens", "at 32k", "at 128k", "KiB/token at 128k",
               "vs MHA (Llama-2-7B) at 128k", "source"});
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const CacheShape& s = shapes[i];
    std::vector<std::string> row{s.idea, s.model, s.configuration, kib(static_cast<double>(s.bytes_per_token()))};
    for (int64_t n : lengths) row.push_back(format_bytes(static_cast<double>(s.bytes_at(n))));
    const auto at_long = static_cast<double>(s.bytes_at(lengths.back()));
    row.push_back(three_digits(at_long / static_cast<double>(lengths.back()) / kKiB));
    row.push_back(three_digits(at_long / static_cast<double>(mha * lengths.back())) + "×");
    row.push_back(costs[i].empty() ? s.source : costs[i]);
    table.add_row(row);
    figures["beyond_gqa"].push_back({{"idea", s.idea}, {"model", s.model}, {"bytes_per_token", s.bytes_per_token()},
                                     {"bytes_4k", s.bytes_at(4096)}, {"bytes_32k", s.bytes_at(32768)}, {"bytes_128k", s.bytes_at(131072)}});
  }
  table.add_note("bytes(n) = Σ over layer groups of layers × elements per token × 2 B × min(n, window); elements = 2 × kv heads × D for "
                 "MHA/GQA/MQA, latent + rotary key for MLA (one vector, no separate K and V).");
  table.add_note("KiB/token: while the sequence fits every window. The sequence columns are what the shape would hold; Llama-2-7B was "
                 "trained for 4k positions, Falcon-7B for 2k, this model for 8k: beyond that, a shape's cost, not a model's.");
  table.add_note("k, M, G: 10^3, 10^6, 10^9 bytes; KiB = 1024 B.");
  table.emit(o.csv_path);
}

}  // namespace infer::gqa
