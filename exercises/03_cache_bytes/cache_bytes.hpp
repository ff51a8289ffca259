// Exercise 03 — K/V cache bytes per token when the cache itself is quantized, and what a memory
// budget holds in blocks.
#pragma once

#include <cstdint>

namespace exercise {

// A quantized K/V cache (as in KIVI, or llama.cpp's q8_0/q4_0 cache types): every layer caches a
// key and a value of H_kv heads of D elements per token, each element in `bits` bits, packed so
// that a key (or value) of one layer and token takes ⌈H_kv·D·bits / 8⌉ bytes; and every group of
// `group` consecutive elements WITHIN A HEAD has its own scale of `scale_bytes` bytes (a head of D
// elements has ⌈D / group⌉ groups; a group never spans two heads). Bytes per token over all layers.
// Throws std::invalid_argument unless 1 ≤ bits ≤ 16 and group ≥ 1.
int64_t quantized_kv_bytes_per_token(int n_layers, int n_kv_heads, int head_dim, int bits, int group, int scale_bytes);

// The most tokens a cache of `memory_bytes` holds when it is allocated in blocks of `block_size`
// tokens (chapter 05) of `bytes_per_token` each: only whole blocks fit. Throws
// std::invalid_argument unless bytes_per_token ≥ 1 and block_size ≥ 1.
int64_t tokens_in_budget(int64_t memory_bytes, int64_t bytes_per_token, int block_size);

}  // namespace exercise
