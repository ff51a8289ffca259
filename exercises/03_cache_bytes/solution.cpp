// Exercise 03 (cache bytes) — reference solution.
#include <stdexcept>

#include "cache_bytes.hpp"

namespace exercise {

int64_t quantized_kv_bytes_per_token(int n_layers, int n_kv_heads, int head_dim, int bits, int group, int scale_bytes) {
  if (bits < 1 || bits > 16 || group < 1) throw std::invalid_argument("quantized_kv_bytes_per_token: bits must be 1 … 16 and group ≥ 1");
  const int64_t elements = int64_t{n_kv_heads} * head_dim;
  // Codes are packed bit by bit; only the whole row rounds up to a byte.
  const int64_t code_bytes = (elements * bits + 7) / 8;
  // Scales are per head: a group that crossed a head boundary would mix two heads' ranges.
  const int64_t scale_count = int64_t{n_kv_heads} * ((head_dim + group - 1) / group);
  // A key and a value in every layer.
  return 2 * int64_t{n_layers} * (code_bytes + scale_count * scale_bytes);
}

int64_t tokens_in_budget(int64_t memory_bytes, int64_t bytes_per_token, int block_size) {
  if (bytes_per_token < 1 || block_size < 1) throw std::invalid_argument("tokens_in_budget: bytes_per_token and block_size must be ≥ 1");
  const int64_t block_bytes = bytes_per_token * block_size;
  return memory_bytes / block_bytes * block_size;  // a partial block cannot be allocated
}

}  // namespace exercise
