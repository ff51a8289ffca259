// Exercise 03 — K/V cache bytes per token beyond grouped-query attention.
#pragma once

#include <cstddef>

#include "model/config.hpp"

namespace exercise {

// Multi-head latent attention (DeepSeek-V2): each layer caches ONE compressed vector per token,
// latent_dim elements from which keys and values are both re-expanded, plus rope_dim elements of
// a decoupled rotary key shared by all heads. Bytes per token over all layers.
std::size_t mla_bytes_per_token(int n_layers, int latent_dim, int rope_dim, int bytes_per_element);

// Cross-layer sharing (CLA): groups of `layers_per_share` consecutive layers use the keys and
// values of the first layer of their group, so only one layer per group has a cache. The model's
// own H_kv heads of dimension D are kept. Throws std::invalid_argument if layers_per_share < 1.
std::size_t cross_layer_bytes_per_token(const infer::LlamaConfig& config, int layers_per_share, int bytes_per_element);

}  // namespace exercise
