// Lecture 10's ways to shrink the K/V cache beyond grouped-query attention, as published model
// shapes: what a token costs per layer, and for how many positions each layer keeps it.
//
//   MHA / GQA / MQA  2 (key and value) × H_kv heads × D per layer            (chapter 03's formula)
//   MLA              one latent vector of d_c plus one rotary key of d_R per layer, shared by
//                    every head, no factor 2 (DeepSeek-V2: d_c = 512, d_R = 64)
//   CLA              groups of k consecutive layers share the first one's keys and values:
//                    ⌈layers / k⌉ layers keep a cache
//   sliding window   a layer keeps only the last W positions
//   local/global     most layers slide over W positions, every n-th layer sees them all
//   recurrent state  a state-space or linear-attention layer keeps a state of fixed size per
//                    sequence, whatever its length (tables/architecture_caches.hpp, table 8)
//
// bytes(n) = Σ over groups of layers × (elements per token × min(n, window) + state) × bytes per element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"

namespace infer::gqa {

struct LayerGroup {
  int layers = 0;
  int64_t elements = 0;  // cached per token per layer
  int64_t window = 0;    // positions kept; 0: every position
  int64_t state = 0;     // kept per layer once per sequence, whatever its length (a recurrent state)
};

struct CacheShape {
  std::string idea, model, configuration, source;
  int bytes_per_element = 2;
  std::vector<LayerGroup> groups;

  int64_t bytes_per_token() const;          // while every window still holds the whole sequence
  int64_t bytes_at(int64_t tokens) const;   // one sequence of `tokens` positions
  int64_t state_bytes() const;              // what a sequence keeps before its first token (bytes_at(0))
};

// Layers that keep keys and values of `kv_heads` heads of `head_dim` (MHA, GQA, MQA), optionally
// over a sliding window.
LayerGroup kv_layers(int layers, int kv_heads, int head_dim, int64_t window = 0);
// Multi-head latent attention: a latent of `latent` plus a rotary key of `rope` per layer.
LayerGroup latent_layers(int layers, int latent, int rope);
// Cross-layer attention: how many of `layers` keep a cache when groups of `share` share one.
int cross_layer_caching_layers(int layers, int share);

// The published shapes of the table (bf16/fp16 caches), then this model's (from its config).
std::vector<CacheShape> published_cache_shapes();
// This model's shape; with a window, every layer local over it, or with global_every = n > 0
// every n-th layer global (n = 6: 5 local to 1 global).
CacheShape own_shape(const LlamaConfig& config, const std::string& name, int64_t window = 0, int global_every = 0);
// How many of `layers` are global when every n-th one is (layers n, 2n, … counted from 1).
int global_layers(int layers, int every);

// The cells of tables 7 and 8: KiB (1024 B) with one decimal; three significant digits without an
// exponent (3840, 67.5, 0.044).
std::string kib(double bytes);
std::string three_digits(double x);

}  // namespace infer::gqa
