#include "architecture_caches.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "measure/table.hpp"

namespace infer::gqa {

LayerState mamba_state(int64_t d_inner, int d_state, int d_conv, int groups) {
  if (d_inner <= 0 || d_state <= 0 || d_conv < 1 || groups < 0)
    throw std::invalid_argument(fmt::format("mamba_state: d_inner {}, d_state {}, d_conv {}, groups {}", d_inner, d_state, d_conv, groups));
  const int64_t conv_width = d_inner + 2LL * groups * d_state;  // x, then B and C of each group
  const std::string conv = groups == 0 ? fmt::format("{}", d_inner)
                                       : fmt::format("({} + 2·{}{})", d_inner, groups == 1 ? "" : fmt::format("{}·", groups), d_state);
  return {fmt::format("{}·{} + {}·{}", d_inner, d_state, d_conv - 1, conv), d_inner * d_state + (d_conv - 1) * conv_width};
}

LayerState delta_net_state(int key_heads, int value_heads, int key_dim, int value_dim, int d_conv) {
  if (key_heads <= 0 || value_heads <= 0 || key_dim <= 0 || value_dim <= 0 || d_conv < 1)
    throw std::invalid_argument(fmt::format("delta_net_state: {} key heads × {}, {} value heads × {}, d_conv {}", key_heads,
                                            key_dim, value_heads, value_dim, d_conv));
  const int64_t matrices = int64_t{value_heads} * key_dim * value_dim;
  const int64_t conv_width = 2LL * key_heads * key_dim + int64_t{value_heads} * value_dim;  // q, k, v
  return {fmt::format("{}·{}·{} + {}·(2·{}·{} + {}·{})", value_heads, key_dim, value_dim, d_conv - 1, key_heads, key_dim,
                      value_heads, value_dim),
          matrices + (d_conv - 1) * conv_width};
}

LayerGroup state_layers(int layers, const LayerState& state) {
  return {.layers = layers, .elements = 0, .window = 0, .state = state.elements};
}

int periodic_layers(int layers, int period, int offset) {
  if (period < 1 || offset < 0 || offset >= period)
    throw std::invalid_argument(fmt::format("an attention layer every {} layers from layer {}", period, offset));
  return layers > offset ? (layers - offset - 1) / period + 1 : 0;
}

namespace {

// "2·8·128": one layer's keys and values per token.
std::string kv_formula(int kv_heads, int head_dim) { return fmt::format("2·{}·{}", kv_heads, head_dim); }

// A hybrid: `attention` layers of H_kv heads of D with a per-token cache, the rest recurrent.
CacheShape hybrid(const std::string& idea, const std::string& model, int layers, int attention, int kv_heads, int head_dim,
                  const LayerState& state, const std::string& source) {
  return {idea, model,
          fmt::format("{} × {} per token + {} × [{}]", attention, kv_formula(kv_heads, head_dim), layers - attention, state.formula),
          source, 2, {kv_layers(attention, kv_heads, head_dim), state_layers(layers - attention, state)}};
}

CacheShape mla(const std::string& model, int layers, int latent, int rope, const std::string& source) {
  return {"MLA", model, fmt::format("{} × ({} + {}) per token", layers, latent, rope), source, 2, {latent_layers(layers, latent, rope)}};
}

CacheShape mamba(const std::string& model, int layers, const LayerState& state, const std::string& source) {
  return {"state space", model, fmt::format("{} × [{}]", layers, state.formula), source, 2, {state_layers(layers, state)}};
}

}  // namespace

std::vector<ArchitecturePair> architecture_pairs(const LlamaConfig& own) {
  const int L = own.n_layers, D = own.head_dim, H_kv = own.n_kv_heads;
  const std::string here = "  this model's shape";
  // Jamba: layer l is attention when l % 8 == 4; Qwen3-Next: every 4th layer (3, 7, …).
  constexpr int kJambaPeriod = 8, kJambaOffset = 4, kQwenEvery = 4;
  const int jamba = periodic_layers(32, kJambaPeriod, kJambaOffset), jamba_own = periodic_layers(L, kJambaPeriod, kJambaOffset);
  const int qwen = global_layers(48, kQwenEvery), qwen_own = global_layers(L, kQwenEvery);
  const int64_t d_inner = 2LL * own.d_model;  // Mamba's expand 2
  return {
      {mla("DeepSeek-V3", 61, 512, 64, "DeepSeek-AI 2024: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64"),
       mla(here, L, 4 * D, D / 2, "DeepSeek-V2's rule d_c = 4·D, d_R = D/2")},
      {mamba("Mamba-2-2.7B", 64, mamba_state(5120, 128, 4, 1),
             "Dao & Gu 2024: d_model 2560, 64 layers; d_state 128, expand 2, d_conv 4, 1 group"),
       mamba(here, L, mamba_state(d_inner, 128, 4, 1), fmt::format("Mamba-2's settings on d = {}", own.d_model))},
      {hybrid("hybrid attention + Mamba", "Jamba-v0.1", 32, jamba, 8, 128, mamba_state(8192, 16, 4, 0),
              "Lieber et al. 2024: attention at l % 8 = 4, 8 kv heads × 128; Mamba d_state 16, expand 2, d_conv 4"),
       hybrid("hybrid attention + Mamba", here, L, jamba_own, H_kv, D, mamba_state(d_inner, 16, 4, 0),
              fmt::format("Jamba's pattern on {} layers, this model's kv heads", L))},
      {hybrid("hybrid attention + DeltaNet", "Qwen3-Next-80B-A3B", 48, qwen, 2, 256, delta_net_state(16, 32, 128, 128, 4),
              "Qwen 2025 config.json: every 4th of 48 layers full, 2 kv heads × 256; Gated DeltaNet 16 k / 32 v heads × 128"),
       hybrid("hybrid attention + DeltaNet", here, L, qwen_own, H_kv, D, delta_net_state(own.n_heads, own.n_heads, D, D, 4),
              fmt::format("every 4th layer full; DeltaNet on this model's {} heads of {}", own.n_heads, D))},
  };
}

// --- 8. the table ---

void architecture_cache_table(const LlamaConfig& own, const std::string& own_name, const CommonOptions& o, nlohmann::json& figures) {
  const std::vector<int64_t> lengths{4096, 32768, 131072};
  CacheShape gqa = own_shape(own, own_name);
  gqa.configuration = fmt::format("{} × {} per token", own.n_layers, kv_formula(own.n_kv_heads, own.head_dim));
  Table table(fmt::format("8. Beyond a per-token cache: latent, state-space and linear-attention layers, published and on this "
                          "model's shape ({} layers, d = {}, {} kv heads of {}), 2-byte elements",
                          own.n_layers, own.d_model, own.n_kv_heads, own.head_dim),
              {"idea", "model", "elements kept: per token, and [per sequence]", "B/token", "B/sequence, fixed", "at 4k tokens",
               "at 32k", "at 128k", "KiB/token at 128k", "vs this model's GQA at 4k", "at 128k", "source"});
  auto add = [&](const CacheShape& s, bool ours) {
    std::vector<std::string> row{s.idea, s.model, s.configuration, format_count(static_cast<double>(s.bytes_per_token())),
                                 format_bytes(static_cast<double>(s.state_bytes()))};
    for (int64_t n : lengths) row.push_back(format_bytes(static_cast<double>(s.bytes_at(n))));
    row.push_back(three_digits(static_cast<double>(s.bytes_at(lengths.back())) / static_cast<double>(lengths.back()) / 1024.0));
    for (int64_t n : {lengths.front(), lengths.back()})
      row.push_back(ours ? three_digits(static_cast<double>(s.bytes_at(n)) / static_cast<double>(gqa.bytes_at(n))) + "×" : "");
    row.push_back(s.source);
    table.add_row(row);
    figures["architectures"].push_back({{"idea", s.idea}, {"model", s.model}, {"this_model_shape", ours},
                                        {"bytes_per_token", s.bytes_per_token()}, {"state_bytes", s.state_bytes()},
                                        {"bytes_4k", s.bytes_at(4096)}, {"bytes_32k", s.bytes_at(32768)},
                                        {"bytes_128k", s.bytes_at(131072)}});
  };
  add(gqa, true);
  std::string break_even;
  for (const ArchitecturePair& p : architecture_pairs(own)) {
    add(p.published, false);
    add(p.own, true);
    if (p.own.bytes_per_token() == 0 && break_even.empty())
      break_even = fmt::format("On this model's shape the {} recipe's state ({}) equals its GQA cache of {} tokens: a shorter "
                               "sequence costs more with the state than with the cache.", p.published.model,
                               format_bytes(static_cast<double>(p.own.state_bytes())),
                               format_count(static_cast<double>(p.own.state_bytes()) / static_cast<double>(gqa.bytes_per_token())));
  }
  table.add_note("bytes(n) = Σ over layer groups of layers × (elements per token × n + elements per sequence) × 2 B. A recurrent "
                 "layer (Mamba's scan state and the last d_conv − 1 inputs of its convolution; DeltaNet's d_k × d_v matrix per "
                 "value head) keeps the same bytes at every length: \"B/sequence, fixed\", and divided over 128k tokens in "
                 "\"KiB/token at 128k\", the axis of table 7.");
  if (!break_even.empty()) table.add_note(break_even);
  table.add_note("\"this model's shape\": the recipe's widths scaled to it (d_c = 4·D, d_inner = 2·d, the same layer pattern); "
                 "a cost on paper, not a model anyone trained.");
  table.add_note("Sparse attention (DeepSeek-V3.2's DSA, NSA) has no row of its own: each query reads only a selection of "
                 "positions (V3.2: the 2048 an indexer ranks highest), but every position stays cached because a later query "
                 "may pick it, so it stores DeepSeek-V3's bytes (plus the indexer's small key per position) and cuts the "
                 "bytes read per step, which is what table 9 finds a decode step's time to follow.");
  table.add_note("k, M, G: 10^3, 10^6, 10^9 bytes; KiB = 1024 B.");
  table.emit(o.csv_path);
}

}  // namespace infer::gqa
