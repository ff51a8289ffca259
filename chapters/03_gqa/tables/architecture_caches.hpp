// Table 8: architectures whose cache is not 2 × layers × H_kv × D per token, each as a published
// model and as the same recipe on this model's shape (30 layers, d = 576, heads of D = 64).
//
//   MLA              one latent of d_c plus one rotary key of d_R per layer and token (DeepSeek-V2,
//                    V3: 512 + 64); on another shape DeepSeek-V2's rule d_c = 4·D, d_R = D/2
//   Mamba            per layer a state of d_inner × d_state that the scan updates in place, plus
//   (state space)    the last d_conv − 1 inputs of its short convolution, each d_inner + 2·g·d_state
//                    wide (x, B and C of g groups; Mamba-1 convolves x only, g = 0)
//   Gated DeltaNet   per value head a d_k × d_v matrix (linear attention's state, decayed and
//   (linear attn.)   corrected at each key) plus the convolution's last d_conv − 1 inputs of q, k, v
//   hybrid           a few attention layers with a per-token cache, the others one of the above
//
// A recurrent layer's state has the same size after one token as after a million: the table puts
// it per sequence, and divided over 128k tokens beside the per-token caches of table 7.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "cache_shapes.hpp"

namespace infer::gqa {

// Elements a layer keeps, with the formula that gives them ("1152·128 + 3·(1152 + 2·128)").
struct LayerState {
  std::string formula;
  int64_t elements = 0;
};
// A Mamba layer: d_inner·d_state + (d_conv − 1)·(d_inner + 2·groups·d_state).
LayerState mamba_state(int64_t d_inner, int d_state, int d_conv, int groups);
// A Gated DeltaNet layer: value_heads·key_dim·value_dim + (d_conv − 1)·(2·key_heads·key_dim + value_heads·value_dim).
LayerState delta_net_state(int key_heads, int value_heads, int key_dim, int value_dim, int d_conv);
// `layers` layers that keep `state` per sequence and nothing per token.
LayerGroup state_layers(int layers, const LayerState& state);
// How many of `layers` (counted from 0) are attention layers when layer l is one iff l % period == offset.
int periodic_layers(int layers, int period, int offset);

// One idea: a published model and the same recipe on this model's shape.
struct ArchitecturePair {
  CacheShape published, own;
};
// DeepSeek-V3 (MLA), Mamba-2-2.7B, Jamba-v0.1 (attention + Mamba), Qwen3-Next-80B-A3B (attention
// + Gated DeltaNet), 2-byte elements; `own` is the loaded model's shape.
std::vector<ArchitecturePair> architecture_pairs(const LlamaConfig& own);

// 8. The table: per token, per sequence, at 4k/32k/128k tokens, and this model's shape against its
//    own GQA cache.
void architecture_cache_table(const LlamaConfig& own, const std::string& own_name, const CommonOptions& o, nlohmann::json& figures);

}  // namespace infer::gqa
