#include "cache_shapes.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer::gqa {

int64_t CacheShape::bytes_per_token() const {
  int64_t total = 0;
  for (const LayerGroup& g : groups) total += g.layers * g.elements * bytes_per_element;
  return total;
}

int64_t CacheShape::bytes_at(int64_t tokens) const {
  int64_t total = 0;
  for (const LayerGroup& g : groups)
    total += g.layers * (g.elements * (g.window > 0 ? std::min(tokens, g.window) : tokens) + g.state) * bytes_per_element;
  return total;
}

int64_t CacheShape::state_bytes() const { return bytes_at(0); }

LayerGroup kv_layers(int layers, int kv_heads, int head_dim, int64_t window) {
  return {.layers = layers, .elements = 2LL * kv_heads * head_dim, .window = window};
}

LayerGroup latent_layers(int layers, int latent, int rope) { return {.layers = layers, .elements = int64_t{latent} + rope}; }

int cross_layer_caching_layers(int layers, int share) {
  if (share < 1) throw std::invalid_argument(fmt::format("cross-layer sharing by {} layers", share));
  return (layers + share - 1) / share;
}

std::vector<CacheShape> published_cache_shapes() {
  // Gemma 3 27B: 62 layers, every 6th global (layers 6, 12, …, 60), the rest local over 1024.
  constexpr int kGemmaLayers = 62, kGemmaPattern = 6;
  const int gemma_global = global_layers(kGemmaLayers, kGemmaPattern);
  return {
      {"MHA", "Llama-2-7B", "32 layers × 32 kv heads × 128", "Touvron et al. 2023; config.json", 2, {kv_layers(32, 32, 128)}},
      {"GQA", "Llama-3-8B", "32 layers × 8 kv heads × 128", "Meta Llama 3 config.json", 2, {kv_layers(32, 8, 128)}},
      {"MQA", "Falcon-7B", "32 layers × 1 kv head × 64 (multi_query)", "TII Falcon-7B config.json", 2, {kv_layers(32, 1, 64)}},
      {"MLA", "DeepSeek-V2", "60 layers × (512 latent + 64 rotary key)", "DeepSeek-AI 2024: kv_lora_rank 512, qk_rope_head_dim 64", 2,
       {latent_layers(60, 512, 64)}},
      {"  MHA", "  DeepSeek-V2's 128 heads, no latent", "60 layers × 128 heads × 128", "the paper's MHA comparison, 2·n_h·d_h·l", 2,
       {kv_layers(60, 128, 128)}},
      {"CLA", "Llama-3-8B shape + CLA2", "GQA above, pairs of layers share one cache: 16 of 32 keep one",
       "Brandon et al. 2024 (CLA2) on Llama-3-8B's shape", 2, {kv_layers(cross_layer_caching_layers(32, 2), 8, 128)}},
      {"sliding window", "Mistral-7B v0.1", "32 layers × 8 kv heads × 128, window 4096", "Jiang et al. 2023: sliding_window 4096", 2,
       {kv_layers(32, 8, 128, 4096)}},
      {"local/global 5:1", "Gemma-3-27B",
       fmt::format("{} local (window 1024) + {} global layers × 16 kv heads × 128", kGemmaLayers - gemma_global, gemma_global),
       "Gemma Team 2025: sliding_window 1024, pattern 6", 2,
       {kv_layers(kGemmaLayers - gemma_global, 16, 128, 1024), kv_layers(gemma_global, 16, 128)}},
  };
}

int global_layers(int layers, int every) {
  if (every < 1) throw std::invalid_argument(fmt::format("a global layer every {} layers", every));
  return layers / every;
}

std::string kib(double bytes) { return fmt::format("{:.1f}", bytes / 1024.0); }

std::string three_digits(double x) {
  return x >= 100 ? fmt::format("{:.0f}", x) : x >= 1 ? fmt::format("{:.3g}", x) : fmt::format("{:.3f}", x);
}

CacheShape own_shape(const LlamaConfig& c, const std::string& name, int64_t window, int global_every) {
  const std::string heads = fmt::format("{} kv heads × {}", c.n_kv_heads, c.head_dim);
  if (window <= 0)
    return {c.n_kv_heads == c.n_heads ? "MHA" : c.n_kv_heads == 1 ? "MQA" : "GQA", name + " (this model)",
            fmt::format("{} layers × {}", c.n_layers, heads), "the loaded file's metadata", 2,
            {kv_layers(c.n_layers, c.n_kv_heads, c.head_dim)}};
  if (global_every <= 0)
    return {"sliding window", "  the same, every layer local", fmt::format("{} layers × {}, window {}", c.n_layers, heads, window), "", 2,
            {kv_layers(c.n_layers, c.n_kv_heads, c.head_dim, window)}};
  const int global = global_layers(c.n_layers, global_every);
  return {fmt::format("local/global {}:1", global_every - 1), "  the same, mixed",
          fmt::format("{} local (window {}) + {} global layers × {}", c.n_layers - global, window, global, heads), "", 2,
          {kv_layers(c.n_layers - global, c.n_kv_heads, c.head_dim, window), kv_layers(global, c.n_kv_heads, c.head_dim)}};
}

}  // namespace infer::gqa
