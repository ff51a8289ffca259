// Attention that never holds the score matrix, in its two forms, and chapter 02's tables 11–13
// that measure them.
//
//   tiled_attention         prefill (FlashAttention's idea, Dao et al. 2022): a block of Bq
//                           queries against a block of Bk keys at a time, with a running maximum,
//                           sum and output per query (the online softmax), so that no buffer holds
//                           more than Bq × Bk scores, whatever the sequence's length.
//   split_decode_attention  decode (FlashDecoding): one query over a long cache, the keys split
//                           into S chunks whose partial softmaxes are computed independently — in
//                           parallel — and then merged by the log-sum-exp rule (merge_partials).
//
// Both compute exactly the function ops::attention computes (up to fp32 round-off): tiling and
// splitting change the order of the arithmetic and the memory it needs, not the result.
// exercises/01_tiled_attention is the single-head, one-row-at-a-time form of the first.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv_tables.hpp"
#include "tensor/tensor.hpp"

namespace infer::kv {

// The prefill kernel's tile: a block of `queries` queries meets a block of `keys` keys at a time.
struct Tiles {
  int64_t queries = 64;  // Bq
  int64_t keys = 64;     // Bk
};

// out[T, H·D] = causal attention of q[T, H·D] over k, v [≥ pos0 + T, H_kv·D]: query t sits at
// position pos0 + t and sees keys 0 … pos0 + t; query head h reads key/value head h / (H / H_kv).
// The same function as ops::attention, computed one (Bq queries × Bk keys) tile at a time: each
// work item (a query head and a block of queries) holds Bq × Bk scores, Bq × D running outputs
// and Bq running maxima and sums, allocated through lib's allocator (so memory_stats sees them).
// CPU tensors; throws std::invalid_argument on shapes that do not fit or tiles < 1.
void tiled_attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
                     Tiles tiles, Tensor& out);

// The softmax of one query's H heads over a set of keys, not yet normalised. Per head h:
//   max[h]            m = the largest score s_j = q_h·k_j/√D of the set (−∞ for no keys)
//   sum[h]            ℓ = Σ_j exp(s_j − m)
//   weighted[h·D …]   o = Σ_j exp(s_j − m) · v_j          (D floats)
// The attention over the set is o / ℓ; two states of disjoint sets merge into the state of
// their union (merge_partials), which is what lets the sets be computed independently.
struct PartialSoftmax {
  std::vector<float> max, sum;  // [H]
  std::vector<float> weighted;  // [H·D]
};

// The state of one query q[1, H·D] over keys [begin, end) of k, v [n, H_kv·D] (begin == end:
// the empty state m = −∞, ℓ = 0, o = 0).
PartialSoftmax partial_softmax(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
                               int64_t begin, int64_t end);
// The state of the union of disjoint key sets, from theirs (the log-sum-exp rule; empty states
// contribute nothing). All parts have the same H and D.
PartialSoftmax merge_partials(std::span<const PartialSoftmax> parts);
// out[1, H·D] = o / ℓ per head. Throws if a head saw no keys.
void normalize(const PartialSoftmax& state, Tensor& out);

// One decode query q[1, H·D] at the last position of the cache k, v [n, H_kv·D], n = bounds.back():
// the keys are split at bounds (0 = b_0 ≤ b_1 ≤ … ≤ b_S = n; chunk s is [b_s, b_{s+1}), possibly
// empty), every (key/value head, chunk) pair is a work item on lib's threads, and the S states of
// each head are merged. Equals ops::attention(q, k, v, H, H_kv, n − 1, out) up to fp32 round-off.
void split_decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
                            std::span<const int64_t> bounds, Tensor& out);
// The bounds of n keys split into S chunks of nearly equal length (the first n % S one longer).
std::vector<int64_t> even_split(int64_t n, int64_t S);

// 11. Prefill attention of one layer of the model's shape: the plain (eager) form's score
//     tensors against the tiled kernel's working memory, from the allocator, and the times of
//     the plain form, lib's kernel and the tiled one, for T = 256 … max_tokens.
// 12. Tile sizes: the tiled kernel against ops::attention for several Bq × Bk.
// 13. FlashDecoding: one query over caches of 1k … 8k positions, split into S = 1, 2, 4, 8 chunks.
void tiled_attention_tables(const Context& cx, int64_t max_tokens);

}  // namespace infer::kv
