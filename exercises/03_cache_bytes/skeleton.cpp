// Exercise 03 (cache bytes) — your answer goes here (see README.md).
#include <stdexcept>

#include "cache_bytes.hpp"

namespace exercise {

int64_t quantized_kv_bytes_per_token(int n_layers, int n_kv_heads, int head_dim, int bits, int group, int scale_bytes) {
  // Per layer: a key and a value. Each: the packed codes (bits, not bytes, per element: round up
  // where?) plus the scales (how many groups does one head have?).
  (void)n_layers; (void)n_kv_heads; (void)head_dim; (void)bits; (void)group; (void)scale_bytes;
  throw std::logic_error("exercise 03_cache_bytes: quantized_kv_bytes_per_token is not written yet");
}

int64_t tokens_in_budget(int64_t memory_bytes, int64_t bytes_per_token, int block_size) {
  // How many whole blocks fit? How many tokens is that?
  (void)memory_bytes; (void)bytes_per_token; (void)block_size;
  throw std::logic_error("exercise 03_cache_bytes: tokens_in_budget is not written yet");
}

}  // namespace exercise
