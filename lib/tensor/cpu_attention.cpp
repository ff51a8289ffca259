// Causal grouped-query attention on the CPU (declared in tensor/cpu_attention.hpp).
//
// Shapes, for one sequence: q [T, H·D] (T queries, H query heads of D), key and value rows of
// H_kv·D (one row per position, found through a KvRows), out [T, H·D]. With grouped-query
// attention the H query heads share H_kv key/value heads: query heads g·G … g·G + G − 1
// (G = H / H_kv, 3 for the default model) all read key/value head g.
//
// That sharing decides the shape of the work. For key/value head g and a block of queries,
// the G heads of every query are the rows of one small matrix Q_g [rows, D] (for one query its
// G heads sit side by side in q, G·D floats), and attention is two small matrix products with
// a softmax between them:
//
//   S = Q_g · K_gᵀ / sqrt(D)    [rows, keys]   each key row is read once for all the rows
//   P = softmax(S) per row                     causal: row (t, h) keeps keys 0 … pos0 + t
//   O = P · V_g                 [rows, D]      each value row is read once for all the rows
//
// Reading one key row per key for the whole group, not once per query head, is the point of
// grouping in memory traffic (a long-context decode step reads the cache once, not G times),
// and a block of queries shares it again (a prefill reads each row once per block).
//
// Work items are (key/value head, block of kQueryBlock queries), handed out one at a time by
// lib's pool (parallel_for with a grain of 1): in a causal prefill the last query block sees
// every key and the first almost none, so the items are handed out largest first and a thread
// that finishes early takes the next one.
//
// Exactness: every number a row computes — its dot products, its max, its exponentials and
// their sum, its weighted sum of values — is computed by the same instructions in the same
// order whatever other rows share its block and whichever thread runs it. So a query gets the
// same bits in a 1 024-token prefill, in a verification pass of 5 queries and alone; and the
// same bits whether its rows are contiguous or spread over blocks of a paged cache.
#include "tensor/cpu_attention.hpp"

// GCC 12's AVX-512 intrinsics start from a placeholder register initialised from itself
// (`__m512 __Y = __Y;` in its avx512fintrin.h), which its own -Wmaybe-uninitialized reports
// wherever xsimd's functions are inlined. The warning is about the compiler's header, not this
// file; it must be silenced before that header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "tensor/thread_pool.hpp"

namespace infer::cpu {
namespace {

using Batch = xsimd::batch<float>;  // one SIMD register of floats: 16 with AVX-512, 8 with AVX2
constexpr int64_t kWidth = Batch::size;
constexpr int64_t kQueryBlock = 16;  // queries per work item (× G rows)
constexpr int kKeyTile = 4;          // keys a row takes at a time: four independent sums in flight

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Where rows 0 … n − 1 of key/value head g lie, looked up once per work item (the KvRows
// arithmetic), so that the loops below just index two arrays of row pointers.
void locate_rows(const KvRows& kv, int64_t n, int64_t head_offset, std::vector<const float*>& keys,
                 std::vector<const float*>& values) {
  keys.resize(n);
  values.resize(n);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t block = j / kv.rows_per_block;
    const int64_t offset = (j % kv.rows_per_block) * kv.row_stride + head_offset;
    keys[j] = kv.key_blocks[block] + offset;
    values[j] = kv.value_blocks[block] + offset;
  }
}

// Asks the memory system for the rows a few tiles ahead of the ones in use, so that a long
// walk over the cache (a decode step at a long context) does not wait on one row at a time.
constexpr int64_t kPrefetchAhead = 8 * kKeyTile;
inline void prefetch_rows(const std::vector<const float*>& rows, int64_t j0, int64_t n, int64_t d) {
  for (int64_t j = j0 + kPrefetchAhead; j < std::min(n, j0 + kPrefetchAhead + kKeyTile); ++j)
    for (int64_t i = 0; i < d; i += 64 / static_cast<int64_t>(sizeof(float)))  // one 64-byte cache line at a time
      __builtin_prefetch(rows[j] + i);
}

// s[n] = q · k_n · scale for N keys (N = 1 or kKeyTile), over d floats: each sum runs in kWidth lanes
// down the row, then across the lanes. Every key's sum sees the same operations in the same
// order whatever N is, so a score has the same bits computed alone or in a tile; N > 1 only
// lets the loads and multiply-adds of N keys overlap.
template <int N>
inline void dot_keys(const float* q, const float* const* keys, int64_t d, float scale, float* s) {
  Batch lanes[N];
  for (int n = 0; n < N; ++n) lanes[n] = Batch(0.0f);
  int64_t i = 0;
  for (; i + kWidth <= d; i += kWidth) {
    const Batch qi = Batch::load_unaligned(q + i);
    for (int n = 0; n < N; ++n) lanes[n] = xsimd::fma(qi, Batch::load_unaligned(keys[n] + i), lanes[n]);
  }
  for (int n = 0; n < N; ++n) {
    float sum = xsimd::hadd(lanes[n]);
    for (int64_t t = i; t < d; ++t) sum += q[t] * keys[n][t];  // the tail when D is not a multiple of the width
    s[n] = sum * scale;
  }
}

// out[0 … d) += Σ_n p[n] · v_n for N value rows, added one after the other (n = 0 first): the
// same operations in the same order as N calls with N = 1, with out loaded and stored once.
template <int N>
inline void add_values(float* out, const float* p, const float* const* values, int64_t d) {
  int64_t i = 0;
  for (; i + kWidth <= d; i += kWidth) {
    Batch o = Batch::load_unaligned(out + i);
    for (int n = 0; n < N; ++n) o = xsimd::fma(Batch(p[n]), Batch::load_unaligned(values[n] + i), o);
    o.store_unaligned(out + i);
  }
  for (; i < d; ++i)
    for (int n = 0; n < N; ++n) out[i] += p[n] * values[n][i];
}

// Turns one row of scores s[0 … n) into probabilities, in place:
//   p_j = exp(s_j − max) / Σ exp(s − max)   (subtracting the max keeps exp from overflowing)
// s has room for round_up(n, kWidth) floats: the padding is set to −inf, whose exp is 0, so
// every step works on whole registers and the exponentials are vectorised.
inline void softmax_row(float* s, int64_t n) {
  const int64_t padded = round_up(n, kWidth);
  std::fill(s + n, s + padded, -std::numeric_limits<float>::infinity());
  Batch max_lanes(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < padded; j += kWidth) max_lanes = xsimd::max(max_lanes, Batch::load_unaligned(s + j));
  std::array<float, kWidth> lanes;
  max_lanes.store_unaligned(lanes.data());
  const Batch max_score(*std::max_element(lanes.begin(), lanes.end()));
  double sum = 0.0;  // in double, as the old scalar loop: thousands of terms of very different sizes
  for (int64_t j = 0; j < padded; j += kWidth) {
    const Batch e = xsimd::exp(Batch::load_unaligned(s + j) - max_score);
    e.store_unaligned(s + j);
    sum += static_cast<double>(xsimd::hadd(e));
  }
  const Batch inv_sum(static_cast<float>(1.0 / sum));
  for (int64_t j = 0; j < padded; j += kWidth) (Batch::load_unaligned(s + j) * inv_sum).store_unaligned(s + j);
}

}  // namespace

void attention(const Tensor& q, const KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out) {
  const int64_t n_queries = q.dim(0);
  const int64_t q_stride = q.dim(1);               // H·D floats per query
  const int64_t head_dim = q_stride / n_heads;     // D
  const int64_t group = n_heads / n_kv_heads;      // G: query heads per key/value head
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const float* qp = q.host<float>();
  float* op = out.host<float>();

  const int64_t n_blocks = (n_queries + kQueryBlock - 1) / kQueryBlock;
  const int64_t n_items = n_blocks * n_kv_heads;
  parallel_for(n_items, 1, [&](int64_t first, int64_t last) {
    // Per thread, reused from item to item: the item's rows, and its scores S, then P.
    thread_local std::vector<const float*> key_rows, value_rows, q_rows;
    thread_local std::vector<float*> out_rows;
    thread_local std::vector<int64_t> n_seen;
    thread_local std::vector<float> scores;
    for (int64_t item = first; item < last; ++item) {
      // Largest first: the last query block sees the most keys.
      const int64_t block = n_blocks - 1 - item / n_kv_heads;
      const int64_t g = item % n_kv_heads;  // the key/value head
      const int64_t t0 = block * kQueryBlock, t1 = std::min(n_queries, t0 + kQueryBlock);

      // Row r of Q_g is query t = t0 + r / G, head h = g·G + r % G: D floats at q + t·H·D + h·D
      // (and its output at the same place in out). Causal: it sees keys 0 … pos0 + t.
      const int64_t n_rows = (t1 - t0) * group;
      q_rows.resize(n_rows);
      out_rows.resize(n_rows);
      n_seen.resize(n_rows);
      for (int64_t r = 0; r < n_rows; ++r) {
        const int64_t t = t0 + r / group, h = g * group + r % group;
        q_rows[r] = qp + t * q_stride + h * head_dim;
        out_rows[r] = op + t * q_stride + h * head_dim;
        n_seen[r] = pos0 + t + 1;
      }
      // Key j is seen by the queries at positions ≥ j: the rows from first_row(j) on.
      const auto first_row = [&](int64_t j) { return std::max<int64_t>(0, j - pos0 - t0) * group; };
      const int64_t n_keys = pos0 + t1;  // what the last query sees
      locate_rows(kv, n_keys, g * head_dim, key_rows, value_rows);
      // One register of padding per row: rows a power of two apart in memory (1 024 keys is
      // 4 KiB) would all fall in the same few sets of the L1 cache and evict one another.
      const int64_t row_len = round_up(n_keys, kWidth) + kWidth;
      scores.resize(n_rows * row_len);
      const auto score_row = [&](int64_t r) { return &scores[r * row_len]; };

      // 1. S = Q_g · K_gᵀ / sqrt(D), kKeyTile keys at a time: the tile's key rows are read
      //    once (from memory into cache) for every row that sees them. A row that sees only
      //    part of a tile (the causal diagonal) takes its keys one by one.
      for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyTile) {
        prefetch_rows(key_rows, j0, n_keys, head_dim);
        for (int64_t r = first_row(j0); r < n_rows; ++r) {
          const int64_t seen = std::min<int64_t>(kKeyTile, n_seen[r] - j0);
          const float* qr = q_rows[r];
          float* s = score_row(r) + j0;
          if (seen == kKeyTile) dot_keys<kKeyTile>(qr, &key_rows[j0], head_dim, scale, s);
          else for (int64_t n = 0; n < seen; ++n) dot_keys<1>(qr, &key_rows[j0 + n], head_dim, scale, s + n);
        }
      }

      // 2. P = softmax(S), row by row, over the keys each row sees.
      for (int64_t r = 0; r < n_rows; ++r) softmax_row(score_row(r), n_seen[r]);

      // 3. O = P · V_g, kKeyTile value rows at a time, read once for every row that sees them.
      for (int64_t r = 0; r < n_rows; ++r) std::fill_n(out_rows[r], head_dim, 0.0f);
      for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyTile) {
        prefetch_rows(value_rows, j0, n_keys, head_dim);
        for (int64_t r = first_row(j0); r < n_rows; ++r) {
          const int64_t seen = std::min<int64_t>(kKeyTile, n_seen[r] - j0);
          float* o = out_rows[r];
          const float* p = score_row(r) + j0;
          if (seen == kKeyTile) add_values<kKeyTile>(o, p, &value_rows[j0], head_dim);
          else for (int64_t n = 0; n < seen; ++n) add_values<1>(o, p + n, &value_rows[j0 + n], head_dim);
        }
      }
    }
  });
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
               Tensor& out) {
  const std::array<const float*, 1> keys{k.host<float>()}, values{v.host<float>()};
  attention(q, KvRows{keys, values, std::max<int64_t>(1, k.dim(0)), k.dim(1)}, n_heads, n_kv_heads, pos0, out);
}

}  // namespace infer::cpu
