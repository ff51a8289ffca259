// Exercise 03 (cache bytes) — reference solution.
#include <stdexcept>

#include "cache_bytes.hpp"
#include "grouped_kv_cache.hpp"  // chapter 03: infer::kv_bytes_per_token

namespace exercise {

std::size_t mla_bytes_per_token(int n_layers, int latent_dim, int rope_dim, int bytes_per_element) {
  // One vector per layer and token, no factor 2: keys and values both come out of the latent.
  return static_cast<std::size_t>(n_layers) * static_cast<std::size_t>(latent_dim + rope_dim) *
         static_cast<std::size_t>(bytes_per_element);
}

std::size_t cross_layer_bytes_per_token(const infer::LlamaConfig& config, int layers_per_share, int bytes_per_element) {
  if (layers_per_share < 1) throw std::invalid_argument("cross_layer_bytes_per_token: layers_per_share must be at least 1");
  // A last, shorter group still needs its own cache: round up.
  const int caching_layers = (config.n_layers + layers_per_share - 1) / layers_per_share;
  return infer::kv_bytes_per_token(caching_layers, config.n_kv_heads, config.head_dim, bytes_per_element);
}

}  // namespace exercise
