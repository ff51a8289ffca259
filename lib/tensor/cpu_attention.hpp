// Causal grouped-query attention on the CPU: the kernel behind ops::attention, and the one
// chapter 05's paged cache calls with its block table.
//
// The kernel never indexes a key or value tensor directly. It asks a KvRows where row j lies,
// so a contiguous cache and a cache in blocks run the same arithmetic and get the same bits.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "tensor/tensor.hpp"

namespace infer::cpu {

// Where key/value row j (position j) of one sequence lies, for key/value head g. Rows come in
// blocks of rows_per_block consecutive positions; inside a block, a row is row_stride floats
// after the one before and head g's D floats start head_stride floats after head g − 1's:
//
//   key row j, head g   = key_blocks[j / rows_per_block]   + (j % rows_per_block) · row_stride + g · head_stride
//   value row j, head g = value_blocks[j / rows_per_block] + (j % rows_per_block) · row_stride + g · head_stride
//
// Two layouts of a block of B rows, the same numbers in a different order:
//   position-major [B, H_kv·D]: a row holds every head of its position (row_stride H_kv·D,
//       head_stride D); one head's keys are D floats out of every H_kv·D, a strided walk.
//   head-major [H_kv, B, D]: each head's rows one after another (row_stride D, head_stride
//       B·D); one head's keys are one contiguous stream.
// A contiguous cache is one block of S rows; a paged cache lists its blocks in the order of its
// block table.
struct KvRows {
  std::span<const float* const> key_blocks;
  std::span<const float* const> value_blocks;
  int64_t rows_per_block = 0;
  int64_t row_stride = 0;   // floats from position j to j + 1 within a block
  int64_t head_stride = 0;  // floats from key/value head g to g + 1 within a block

  const float* key(int64_t j, int64_t g) const { return key_blocks[j / rows_per_block] + offset(j, g); }
  const float* value(int64_t j, int64_t g) const { return value_blocks[j / rows_per_block] + offset(j, g); }
  int64_t offset(int64_t j, int64_t g) const { return (j % rows_per_block) * row_stride + g * head_stride; }
};

// The rows of contiguous k and v: [S, H_kv·D] (position-major) or [H_kv, S, D] (head-major).
// `blocks` keeps the two block pointers the result refers to; it must outlive the result.
KvRows contiguous_rows(const Tensor& k, const Tensor& v, int n_kv_heads, std::array<const float*, 2>& blocks);

// The kernel cuts every head's keys into chunks of this many positions, at fixed positions (0,
// 256, 512, …): a work item is one chunk of one key/value head for a block of queries, and a
// query's chunks are merged in order by the log-sum-exp rule (chapter 02's FlashDecoding table).
constexpr int64_t kAttentionKeyChunk = 256;

// out[T, H·D] = causal attention of q[T, H·D] over the rows kv locates (at least pos0 + T of
// them): query t sits at position pos0 + t and sees rows 0 … pos0 + t; query head h reads
// key/value head h / (H / H_kv).
//
// A query's output has the same bits whatever other queries share the call and whichever
// thread computes it, so a pass of many queries (a prefill, a speculative verification)
// computes each one exactly as a one-token decode step would.
void attention(const Tensor& q, const KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out);

// The same over contiguous k, v, [S, H_kv·D] or [H_kv, S, D] (one block of S rows):
// ops::attention on the CPU.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
               Tensor& out);

}  // namespace infer::cpu
