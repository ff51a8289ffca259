// Exercise 03 (cache bytes) — your answer goes here (see README.md).
#include <stdexcept>

#include "cache_bytes.hpp"
#include "grouped_kv_cache.hpp"  // chapter 03: infer::kv_bytes_per_token, the GQA formula

namespace exercise {

std::size_t mla_bytes_per_token(int n_layers, int latent_dim, int rope_dim, int bytes_per_element) {
  // What does one layer store per token? Is there still a separate key and value?
  (void)n_layers; (void)latent_dim; (void)rope_dim; (void)bytes_per_element;
  throw std::logic_error("exercise 03_cache_bytes: mla_bytes_per_token is not written yet");
}

std::size_t cross_layer_bytes_per_token(const infer::LlamaConfig& config, int layers_per_share, int bytes_per_element) {
  // How many layers keep a cache when groups of layers_per_share share one? (30 layers in
  // groups of 4: is that 7 or 8?) Then reuse chapter 03's formula for that many layers.
  (void)config; (void)layers_per_share; (void)bytes_per_element;
  throw std::logic_error("exercise 03_cache_bytes: cross_layer_bytes_per_token is not written yet");
}

}  // namespace exercise
