// Causal grouped-query attention on the CPU: the kernel behind ops::attention, and the one
// chapter 05's paged cache calls with its block table.
//
// The kernel never indexes a key or value tensor directly. It asks a KvRows where row j lies,
// so a contiguous cache and a cache in blocks run the same arithmetic and get the same bits.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.hpp"

namespace infer::cpu {

// Where key/value row j (position j) of one sequence lies. Rows come in blocks of
// rows_per_block consecutive rows, each row_stride floats after the one before (a row holds
// every key/value head of its position: H_kv·D floats):
//
//   key row j   = key_blocks[j / rows_per_block]   + (j % rows_per_block) · row_stride
//   value row j = value_blocks[j / rows_per_block] + (j % rows_per_block) · row_stride
//
// A contiguous [S, H_kv·D] tensor is one block of S rows; a paged cache lists its blocks in the
// order of its block table.
struct KvRows {
  std::span<const float* const> key_blocks;
  std::span<const float* const> value_blocks;
  int64_t rows_per_block = 0;
  int64_t row_stride = 0;  // floats, H_kv·D
};

// out[T, H·D] = causal attention of q[T, H·D] over the rows kv locates (at least pos0 + T of
// them): query t sits at position pos0 + t and sees rows 0 … pos0 + t; query head h reads
// key/value head h / (H / H_kv).
//
// A query's output has the same bits whatever other queries share the call and whichever
// thread computes it, so a pass of many queries (a prefill, a speculative verification)
// computes each one exactly as a one-token decode step would.
void attention(const Tensor& q, const KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out);

// The same over contiguous k, v [S, H_kv·D] (one block of S rows): ops::attention on the CPU.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
               Tensor& out);

}  // namespace infer::cpu
