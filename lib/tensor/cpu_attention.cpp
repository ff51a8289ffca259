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
// Chunks. A decode step has one query, so (key/value head, block of queries) would be only
// H_kv = 3 pieces of work: on 2 threads one thread would do two of them while the other waits,
// however long the context. So the keys are cut too, into chunks at fixed positions (0 … 255,
// 256 … 511, …), and a work item is (key/value head, block of kQueryBlock queries, chunk): a
// 4 096-token context gives 48 items for a decode step. Each item leaves, for each of its rows,
//
//   m = max_j s_j,   l = Σ_j exp(s_j − m),   o = Σ_j exp(s_j − m) · v_j      (j in the chunk)
//
// and once all of a row's chunks are done, they are combined in order, rescaling each to the
// largest m:
//
//   M = max_c m_c,   L = Σ_c exp(m_c − M) · l_c,   out = Σ_c (exp(m_c − M) / L) · o_c
//
// which is softmax(S) · V again (the same regrouping FlashAttention's online softmax and
// "flash decoding" make), with each chunk read by one thread straight through.
//
// Exactness: every number a row computes — its dot products (each one lane's chain of
// multiply-adds over a tile of keys turned on its side: dot_keys), each chunk's max, exponentials,
// sum and weighted sum of values, and the combination of its chunks — is computed by the same
// instructions in the same order whatever other rows share its block and whichever thread runs
// it. The chunks sit at fixed positions, so they are the same chunks in every call. So a query
// gets the same bits in a 1 024-token prefill, in a verification pass of 5 queries and alone;
// and the same bits whether its rows are contiguous, spread over blocks of a paged cache, or
// stored position-major or head-major (KvRows): only the addresses differ.
#include "tensor/cpu_attention.hpp"

//
// SIMD: the file is compiled once per SIMD target (Highway's foreach_target.h) and each call
// runs the best one this CPU has (tensor/simd_target.hpp); a process uses one target throughout.

// GCC 12's AVX-512 intrinsics start from a placeholder register initialised from itself
// (`__m512 __Y = __Y;` in its avx512fintrin.h), which its own -Wmaybe-uninitialized reports
// wherever they are inlined. The warning is about the compiler's header, not this file; it must
// be silenced before that header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tensor/cpu_attention.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>  // Exp

#include "tensor/load_piece-inl.h"
#include "tensor/ops.hpp"            // cpu_backend
#include "tensor/ops_reference.hpp"  // the plain loop it stands in for
#include "tensor/simd_target.hpp"
#include "tensor/thread_pool.hpp"

HWY_BEFORE_NAMESPACE();
namespace infer::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
// One SIMD register of floats, the widest the CPU has: 16 lanes on AVX-512, 8 on AVX2, 4 on
// SSE4 and NEON. Scores, exponentials and output floats are each computed in a lane of their
// own, so a wider register computes more of them at once without changing their bits; only the
// sums of the exponentials (one running double per lane, LaneSumsInDouble) depend on the width,
// and a process runs one SIMD target throughout.
using D = hn::ScalableTag<float>;
using Batch = hn::Vec<D>;
constexpr int64_t kWidth = static_cast<int64_t>(hn::MaxLanes(D()));
constexpr int64_t kQueryBlock = 16;  // queries per work item (× G rows)
constexpr int64_t kKeyChunk = kAttentionKeyChunk;  // keys per chunk (a multiple of kValueBlock and kKeyTile)
constexpr int64_t kKeyTile = 2 * kWidth;  // keys whose scores a row computes together: two registers
// Query rows that share each load of a tile's keys: their 2 × kScoreRows running scores stay in
// registers (16 of AVX-512's 32; 8 of the 16 that AVX2, SSE4 and the 4-lane NEON code use).
constexpr int kScoreRows = kWidth >= 16 ? 8 : 4;
constexpr int64_t kValueBlock = 32;  // value rows every row of a work item takes before the next ones
constexpr int kRowTile = 3;           // output rows that share each load of a value row
static_assert(kKeyChunk % kValueBlock == 0 && kKeyChunk % kKeyTile == 0, "a chunk holds whole tiles");

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Where rows first … first + n − 1 of key/value head g lie, looked up once per work item (the
// KvRows arithmetic), so that the loops below just index two arrays of row pointers.
void locate_rows(const KvRows& kv, int64_t first, int64_t n, int64_t g, std::vector<const float*>& keys,
                 std::vector<const float*>& values) {
  keys.resize(n);
  values.resize(n);
  for (int64_t j = 0; j < n; ++j) {
    keys[j] = kv.key(first + j, g);
    values[j] = kv.value(first + j, g);
  }
}

// Asks the memory system for the rows a few tiles ahead of the ones in use, so that a long
// walk over the cache (a decode step at a long context) does not wait on one row at a time.
// `tile`: the rows the caller takes at a time, from j0. Always inlined: a compiler may delete
// the calls to a separate function that only prefetches (tests/check_prefetch.sh tells how).
constexpr int64_t kPrefetchAhead = 32;
HWY_INLINE void prefetch_rows(const std::vector<const float*>& rows, int64_t j0, int64_t tile, int64_t n, int64_t d) {
  for (int64_t j = j0 + kPrefetchAhead; j < std::min(n, j0 + kPrefetchAhead + tile); ++j)
    for (int64_t i = 0; i < d; i += 64 / static_cast<int64_t>(sizeof(float)))  // one 64-byte cache line at a time
      __builtin_prefetch(rows[j] + i);
}

// A tile of keys turned on its side: kt[i · kKeyTile + j] = element i of key j (j < n; zeros
// after), so that element i of all the tile's keys is one row of two registers, one key per
// lane. 4 × 4 blocks at a time: four keys' elements i … i + 3 loaded, transposed by two rounds of
// interleaving (floats, then pairs of floats), stored as four pieces of four keys.
HWY_INLINE void transpose_keys(const float* const* keys, int64_t n, int64_t d, float* kt) {
  const hn::Full128<float> d4;
  const hn::Repartition<double, hn::Full128<float>> d2;  // a pair of floats as one lane
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    int64_t i = 0;
    for (; i + 4 <= d; i += 4) {
      const auto a = hn::LoadU(d4, keys[j] + i), b = hn::LoadU(d4, keys[j + 1] + i);
      const auto c = hn::LoadU(d4, keys[j + 2] + i), e = hn::LoadU(d4, keys[j + 3] + i);
      // a0 b0 a1 b1, c0 e0 c1 e1, a2 b2 a3 b3, c2 e2 c3 e3
      const auto ab01 = hn::BitCast(d2, hn::InterleaveLower(d4, a, b)), ce01 = hn::BitCast(d2, hn::InterleaveLower(d4, c, e));
      const auto ab23 = hn::BitCast(d2, hn::InterleaveUpper(d4, a, b)), ce23 = hn::BitCast(d2, hn::InterleaveUpper(d4, c, e));
      hn::StoreU(hn::BitCast(d4, hn::InterleaveLower(d2, ab01, ce01)), d4, kt + (i + 0) * kKeyTile + j);  // a0 b0 c0 e0
      hn::StoreU(hn::BitCast(d4, hn::InterleaveUpper(d2, ab01, ce01)), d4, kt + (i + 1) * kKeyTile + j);  // a1 b1 c1 e1
      hn::StoreU(hn::BitCast(d4, hn::InterleaveLower(d2, ab23, ce23)), d4, kt + (i + 2) * kKeyTile + j);
      hn::StoreU(hn::BitCast(d4, hn::InterleaveUpper(d2, ab23, ce23)), d4, kt + (i + 3) * kKeyTile + j);
    }
    for (; i < d; ++i)  // D not a multiple of 4
      for (int k = 0; k < 4; ++k) kt[i * kKeyTile + j + k] = keys[j + k][i];
  }
  for (; j < n; ++j)
    for (int64_t i = 0; i < d; ++i) kt[i * kKeyTile + j] = keys[j][i];
  for (; j < kKeyTile; ++j)  // past the chunk's last key: scores nobody reads, but no garbage
    for (int64_t i = 0; i < d; ++i) kt[i * kKeyTile + j] = 0.0f;
}

// s_r[j] = (q_r · k_j) · scale for R query rows and the kKeyTile keys of a tile on its side (kt),
// over d floats. Lane j of a register holds key j's score, built by one multiply-add per
// element in element order: s = 0, then s = q[i]·k[i] + s for i = 0 … d − 1, rounded after
// each (and no sum across lanes). That chain is the same whatever R is, whichever rows and tile the score is
// computed with, and whatever the register's width, so a score has the same bits in a prefill,
// in a verification pass and alone. Each load of the keys serves R rows; each query element is
// broadcast once for the tile.
template <int R>
HWY_INLINE void dot_keys(const float* const* q, const float* kt, int64_t d, float scale, float* const* s) {
  const D df;
  Batch acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = hn::Zero(df);
  for (int64_t i = 0; i < d; ++i) {
    // used by R rows: kept in their registers
    const Batch k0 = load_piece<R>(df, kt + i * kKeyTile), k1 = load_piece<R>(df, kt + i * kKeyTile + kWidth);
    for (int r = 0; r < R; ++r) {
      const Batch qi = hn::Set(df, q[r][i]);
      acc[r][0] = hn::MulAdd(qi, k0, acc[r][0]);
      acc[r][1] = hn::MulAdd(qi, k1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    hn::StoreU(hn::Mul(acc[r][0], hn::Set(df, scale)), df, s[r]);
    hn::StoreU(hn::Mul(acc[r][1], hn::Set(df, scale)), df, s[r] + kWidth);
  }
}

// R rows of outputs, each plus a weighted sum of the same n value rows:
//   out_r[i … i + C·kWidth) += Σ_j p_r[j] · v_j[i … i + C·kWidth)   for r = 0 … R − 1
// The R·C pieces of out stay in registers while the n value rows go by (j = 0 first), and each
// piece of a value row is loaded once for the R rows: a load serves R multiply-adds, not one.
// With one row per load this loop is limited by its loads, not its multiply-adds; sharing each
// load among R rows lifts that limit (bench_decode, table 4, prints attention's share of a
// 1 024-token prefill).
// Each element of out still sees the same operations in the same order (a multiply-add per
// value row, in row order) whatever R and C are, so a row has the same bits in a tile or alone.
template <int R, int C>
inline void add_values_piece(float* const* out, const float* const* p, const float* const* values, int64_t n,
                             int64_t i) {
  const D d;
  Batch o[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) o[r][c] = hn::LoadU(d, out[r] + i + c * kWidth);
  for (int64_t j = 0; j < n; ++j) {
    Batch pj[R];
    for (int r = 0; r < R; ++r) pj[r] = hn::Set(d, p[r][j]);
    const float* v = values[j] + i;
    for (int c = 0; c < C; ++c) {
      const Batch vc = load_piece<R>(d, v + c * kWidth);  // used by R rows: kept in its register
      for (int r = 0; r < R; ++r) o[r][c] = hn::MulAdd(pj[r], vc, o[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) hn::StoreU(o[r][c], d, out[r] + i + c * kWidth);
}

// out_r[0 … d) += Σ_j p_r[j] · v_j for R rows and n value rows: four registers of each row at a
// time (R = 3: twelve sums, three weights and a value piece fill the sixteen registers), then
// one, then the floats left over.
template <int R>
inline void add_values(float* const* out, const float* const* p, const float* const* values, int64_t n, int64_t d) {
  int64_t i = 0;
  for (; i + 4 * kWidth <= d; i += 4 * kWidth) add_values_piece<R, 4>(out, p, values, n, i);
  for (; i + kWidth <= d; i += kWidth) add_values_piece<R, 1>(out, p, values, n, i);
  for (; i < d; ++i)
    for (int r = 0; r < R; ++r)
      for (int64_t j = 0; j < n; ++j) out[r][i] += p[r][j] * values[j][i];
}

// kWidth running sums in double, one per lane of a Batch: lane l of every added register goes
// to sum l. The float register's two halves are widened straight into two registers of doubles
// (one sum per lane in memory instead made every lane a store, a reload and a scalar add, which
// cost more than the exponential).
class LaneSumsInDouble {
  using DH = hn::Half<D>;                 // half a register of floats …
  using DD = hn::Rebind<double, DH>;      // … as doubles: a whole register again

 public:
  // Written out: an implicit constructor would not be compiled for this target (Highway's
  // target attributes cover only the functions written inside HWY_BEFORE_NAMESPACE).
  LaneSumsInDouble() : low_(hn::Zero(DD())), high_(hn::Zero(DD())) {}
  HWY_INLINE void add(Batch e) {
    low_ = hn::Add(low_, hn::PromoteTo(DD(), hn::LowerHalf(DH(), e)));   // lanes 0 … kWidth/2 − 1
    high_ = hn::Add(high_, hn::PromoteTo(DD(), hn::UpperHalf(DH(), e)));  // the rest
  }
  double total() const {  // the lanes' sums added in lane order
    alignas(64) double lanes[kWidth];
    hn::Store(low_, DD(), lanes);
    hn::Store(high_, DD(), lanes + kWidth / 2);
    double sum = 0.0;
    for (int64_t l = 0; l < kWidth; ++l) sum += lanes[l];
    return sum;
  }

 private:
  hn::Vec<DD> low_, high_;
};

// One row's share of one chunk: its largest score m and l = Σ exp(s_j − m), computed in
// double (thousands of terms of very different sizes over a long context); its o lives in the
// item's output rows.
struct ChunkSums {
  float max;
  double sum;
};

// Turns one row of scores s[0 … n) of a chunk into exp(s_j − m), in place, and returns m and
// their sum (subtracting the max keeps exp from overflowing; the combination divides by the
// sum). s has room for round_up(n, kWidth) floats: the padding is set to −inf, whose exp is 0,
// so every step works on whole registers and the exponentials are vectorised.
inline ChunkSums exp_row(float* s, int64_t n) {
  const D d;
  const int64_t padded = round_up(n, kWidth);
  std::fill(s + n, s + padded, -std::numeric_limits<float>::infinity());
  Batch max_lanes = hn::Set(d, -std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < padded; j += kWidth) max_lanes = hn::Max(max_lanes, hn::LoadU(d, s + j));
  const Batch max_score = hn::MaxOfLanes(d, max_lanes);  // in every lane
  LaneSumsInDouble sums;  // one running sum per lane, added up in lane order at the end
  for (int64_t j = 0; j < padded; j += kWidth) {
    const Batch e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + j), max_score));
    hn::StoreU(e, d, s + j);
    sums.add(e);
  }
  return {hn::GetLane(max_score), sums.total()};
}

// out[0 … d) = Σ_c w_c · o_c over a row's chunks c = 0 … n − 1 in order (o_c: d floats, one
// chunk's weighted sum of values), w_c = exp(m_c − M) / L with M the largest m_c and
// L = Σ exp(m_c − M) · l_c: the softmax over all the row's keys, assembled from its chunks.
inline void combine_chunks(const ChunkSums* sums, const float* const* o, int64_t n, int64_t d, float* out) {
  const D df;
  float max_score = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < n; ++c) max_score = std::max(max_score, sums[c].max);
  double total = 0.0;
  for (int64_t c = 0; c < n; ++c) total += std::exp(static_cast<double>(sums[c].max) - max_score) * sums[c].sum;
  std::fill_n(out, d, 0.0f);
  for (int64_t c = 0; c < n; ++c) {
    const float w = static_cast<float>(std::exp(static_cast<double>(sums[c].max) - max_score) / total);
    int64_t i = 0;
    for (; i + kWidth <= d; i += kWidth)
      hn::StoreU(hn::MulAdd(hn::Set(df, w), hn::LoadU(df, o[c] + i), hn::LoadU(df, out + i)), df, out + i);
    for (; i < d; ++i) out[i] += w * o[c][i];
  }
}

}  // namespace

// One target's attention (cpu::attention below picks the target).
void Attention(const Tensor& q, const KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out) {
  const int64_t n_queries = q.dim(0);
  const int64_t q_stride = q.dim(1);               // H·D floats per query
  const int64_t head_dim = q_stride / n_heads;     // D
  const int64_t group = n_heads / n_kv_heads;      // G: query heads per key/value head
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const float* qp = q.host<float>();
  float* op = out.host<float>();

  // The work items, (query block, key/value head, chunk), and where each (block, head)'s
  // items start: its chunks are consecutive items, in chunk order.
  struct Item {
    int64_t block, head, chunk;
  };
  const int64_t n_blocks = (n_queries + kQueryBlock - 1) / kQueryBlock;
  const auto block_queries = [&](int64_t block) {  // queries t0 … t1 − 1
    return std::pair{block * kQueryBlock, std::min(n_queries, (block + 1) * kQueryBlock)};
  };
  // Kept from call to call by the calling thread. The threads below reach them through plain
  // pointers: a thread_local named inside a lambda (or a reference bound to one) can be taken
  // as the running thread's own.
  thread_local std::vector<Item> item_list;
  thread_local std::vector<int64_t> first_item_list;  // per (block, head)
  thread_local std::vector<ChunkSums> chunk_sum_list;
  thread_local std::vector<float> chunk_out_list;
  item_list.clear();
  first_item_list.clear();
  for (int64_t block = 0; block < n_blocks; ++block) {
    const int64_t n_keys = pos0 + block_queries(block).second;  // what the block's last query sees
    for (int64_t g = 0; g < n_kv_heads; ++g) {
      first_item_list.push_back(std::ssize(item_list));
      for (int64_t c = 0; c * kKeyChunk < n_keys; ++c) item_list.push_back({block, g, c});
    }
  }
  // Every item's results for each of its rows: m and l, and o [D].
  const int64_t max_rows = std::min(n_queries, kQueryBlock) * group;
  chunk_sum_list.resize(item_list.size() * max_rows);
  chunk_out_list.resize(item_list.size() * max_rows * head_dim);
  const Item* const items = item_list.data();
  const int64_t* const first_item = first_item_list.data();
  ChunkSums* const chunk_sums = chunk_sum_list.data();
  float* const chunk_out = chunk_out_list.data();
  const int64_t n_items = std::ssize(item_list);
  const auto sums_of = [&](int64_t item, int64_t r) { return &chunk_sums[item * max_rows + r]; };
  const auto out_of = [&](int64_t item, int64_t r) { return &chunk_out[(item * max_rows + r) * head_dim]; };

  // Row r of Q_g in a block is query t = t0 + r / G, head h = g·G + r % G: D floats at
  // q + t·H·D + h·D (and its output at the same place in out). Causal: it sees keys
  // 0 … pos0 + t, n_seen(r) of them. Rows are in order of the keys they see.
  const auto query_row = [&](int64_t t0, int64_t g, int64_t r) {
    return (t0 + r / group) * q_stride + (g * group + r % group) * head_dim;
  };
  const auto n_seen = [&](int64_t t0, int64_t r) { return pos0 + t0 + r / group + 1; };

  // The second step: each row of (block, head) bg gets its chunks combined, in chunk order, into
  // its output. Whichever thread finishes the last of bg's chunks runs it: a countdown per
  // (block, head), so that a decode step needs no second round of the threads. (The countdown's
  // acquire-release makes the other threads' chunks visible to the thread that combines them.)
  std::vector<std::atomic<int64_t>> chunks_left(first_item_list.size());
  for (std::size_t bg = 0; bg < chunks_left.size(); ++bg) {
    const int64_t end = bg + 1 < first_item_list.size() ? first_item[bg + 1] : n_items;
    chunks_left[bg].store(end - first_item[bg], std::memory_order_relaxed);
  }
  const auto combine = [&](int64_t bg) {
    thread_local std::vector<ChunkSums> sums;
    thread_local std::vector<const float*> parts;
    const int64_t block = bg / n_kv_heads, g = bg % n_kv_heads;
    const int64_t t0 = block_queries(block).first, n_rows = (block_queries(block).second - t0) * group;
    for (int64_t r = 0; r < n_rows; ++r) {
      const int64_t n_chunks = (n_seen(t0, r) + kKeyChunk - 1) / kKeyChunk;
      sums.resize(n_chunks);
      parts.resize(n_chunks);
      for (int64_t c = 0; c < n_chunks; ++c) {
        sums[c] = *sums_of(first_item[bg] + c, r);
        parts[c] = out_of(first_item[bg] + c, r);
      }
      combine_chunks(sums.data(), parts.data(), n_chunks, head_dim, op + query_row(t0, g, r));
    }
  };

  // Each item's chunk of keys for each row of its block that sees any of them; then, if it was
  // its (block, head)'s last chunk to finish, the combination.
  parallel_for(n_items, 1, [&](int64_t first, int64_t last) {
    // Per thread, reused from item to item: the chunk's rows, and its scores S, then exp(S − m).
    thread_local std::vector<const float*> key_rows, value_rows, q_rows;
    thread_local std::vector<float*> o_rows;
    thread_local std::vector<float> scores;
    thread_local std::vector<float> key_tile;  // a tile of keys on its side: [D, kKeyTile]
    for (int64_t item = first; item < last; ++item) {
      // (Plain variables, not structured bindings: the lambdas below use them, and clang before
      // 16 cannot capture a binding.)
      const int64_t block = items[item].block, g = items[item].head, chunk = items[item].chunk;
      const int64_t t0 = block_queries(block).first, t1 = block_queries(block).second;
      const int64_t n_rows = (t1 - t0) * group;
      // The chunk: keys c0 … c1 − 1 (the last chunk ends at what the block's last query sees).
      const int64_t c0 = chunk * kKeyChunk, c1 = std::min(pos0 + t1, c0 + kKeyChunk);
      // Key j is seen by the queries at positions ≥ j: the rows from first_row(j) on.
      const auto first_row = [&](int64_t j) { return std::max<int64_t>(0, j - pos0 - t0) * group; };
      q_rows.resize(n_rows);
      o_rows.resize(n_rows);
      for (int64_t r = first_row(c0); r < n_rows; ++r) {
        q_rows[r] = qp + query_row(t0, g, r);
        o_rows[r] = out_of(item, r);
      }
      locate_rows(kv, c0, c1 - c0, g, key_rows, value_rows);  // key_rows[j − c0]: key j
      // One register of padding per row: rows a power of two apart in memory would all fall in
      // the same few sets of the L1 cache and evict one another.
      const int64_t row_len = round_up(kKeyChunk, kWidth) + kWidth;
      scores.resize(n_rows * row_len);
      key_tile.resize(head_dim * kKeyTile);
      const auto score_row = [&](int64_t r) { return &scores[r * row_len]; };  // [j − c0]

      // 1. S = Q_g · K_gᵀ / sqrt(D), kKeyTile keys at a time: the tile is turned on its side
      //    once (its key rows read from memory once) for every row that sees any of it, and
      //    kScoreRows rows at a time share each load of it. A row on the causal diagonal, which
      //    sees only part of the tile, computes the whole tile too: the scores of keys it does
      //    not see are never read (step 2 reads only what a row sees).
      float* const kt = key_tile.data();
      for (int64_t j0 = c0; j0 < c1; j0 += kKeyTile) {
        prefetch_rows(key_rows, j0 - c0, kKeyTile, c1 - c0, head_dim);
        transpose_keys(&key_rows[j0 - c0], std::min(kKeyTile, c1 - j0), head_dim, kt);
        int64_t r = first_row(j0);
        float* s[kScoreRows];  // where each row's scores of the tile go
        const auto rows_from = [&](int64_t first, int n) {
          for (int i = 0; i < n; ++i) s[i] = score_row(first + i) + j0 - c0;
          return &q_rows[first];
        };
        for (; r + kScoreRows <= n_rows; r += kScoreRows) dot_keys<kScoreRows>(rows_from(r, kScoreRows), kt, head_dim, scale, s);
        if constexpr (kScoreRows > 4)
          for (; r + 4 <= n_rows; r += 4) dot_keys<4>(rows_from(r, 4), kt, head_dim, scale, s);
        switch (n_rows - r) {  // the rows left over: a decode step's G = 3 rows end up here
          case 3: dot_keys<3>(rows_from(r, 3), kt, head_dim, scale, s); break;
          case 2: dot_keys<2>(rows_from(r, 2), kt, head_dim, scale, s); break;
          case 1: dot_keys<1>(rows_from(r, 1), kt, head_dim, scale, s); break;
          default: break;
        }
      }

      // 2. exp(S − m), row by row, over the chunk's keys each row sees.
      const auto seen_from = [&](int64_t r, int64_t j0, int64_t j1) {  // of keys j0 … j1 − 1
        return std::clamp<int64_t>(n_seen(t0, r) - j0, 0, j1 - j0);
      };
      for (int64_t r = first_row(c0); r < n_rows; ++r) *sums_of(item, r) = exp_row(score_row(r), seen_from(r, c0, c1));

      // 3. o = exp(S − m) · V_g, kValueBlock value rows at a time (they stay in the L1 cache
      //    while every row that sees them goes by), kRowTile rows at a time (each load of a
      //    value row serves them all). A tile's first row sees the fewest keys: the tile takes
      //    those keys together, and each later row adds the rest alone.
      for (int64_t r = first_row(c0); r < n_rows; ++r) std::fill_n(o_rows[r], head_dim, 0.0f);
      for (int64_t j0 = c0; j0 < c1; j0 += kValueBlock) {
        prefetch_rows(value_rows, j0 - c0, kValueBlock, c1 - c0, head_dim);
        const int64_t j1 = std::min(c1, j0 + kValueBlock);
        const float* const* values = &value_rows[j0 - c0];
        // Row r alone, the block's keys from j0 + from on that it sees.
        const auto add_alone = [&](int64_t r, int64_t from) {
          const float* p = score_row(r) + j0 - c0 + from;
          add_values<1>(&o_rows[r], &p, values + from, seen_from(r, j0, j1) - from, head_dim);
        };
        int64_t r = first_row(j0);
        for (; r + kRowTile <= n_rows; r += kRowTile) {
          const float* p[kRowTile];
          for (int i = 0; i < kRowTile; ++i) p[i] = score_row(r + i) + j0 - c0;
          const int64_t together = seen_from(r, j0, j1);
          add_values<kRowTile>(&o_rows[r], p, values, together, head_dim);
          for (int i = 1; i < kRowTile; ++i) add_alone(r + i, together);
        }
        for (; r < n_rows; ++r) add_alone(r, 0);
      }
      const int64_t bg = block * n_kv_heads + g;
      if (chunks_left[bg].fetch_sub(1, std::memory_order_acq_rel) == 1) combine(bg);
    }
  });

}

}  // namespace infer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer::cpu {

HWY_EXPORT(Attention);

void attention(const Tensor& q, const KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out) {
  // Chapter 05's paged cache calls this entry point directly: it follows the backend choice too.
  if (kv.rows_per_block <= 0 || kv.row_stride <= 0 || kv.head_stride < 0 || (n_kv_heads > 1 && kv.head_stride == 0))
    throw std::invalid_argument("cpu::attention: KvRows without rows_per_block, row_stride and head_stride");
  if (cpu_backend() == CpuBackend::reference) return reference::attention(q, kv, n_heads, n_kv_heads, pos0, out);
  simd::init();
  HWY_DYNAMIC_DISPATCH(Attention)(q, kv, n_heads, n_kv_heads, pos0, out);
}

KvRows contiguous_rows(const Tensor& k, const Tensor& v, int n_kv_heads, std::array<const float*, 2>& blocks) {
  blocks = {k.host<float>(), v.host<float>()};
  const std::span<const float* const> keys(&blocks[0], 1), values(&blocks[1], 1);
  if (k.rank() == 3) {  // head-major [H_kv, S, D]
    const int64_t S = k.dim(1), D = k.dim(2);
    return KvRows{keys, values, std::max<int64_t>(1, S), D, S * D};
  }
  const int64_t width = k.dim(1);  // position-major [S, H_kv·D]
  return KvRows{keys, values, std::max<int64_t>(1, k.dim(0)), width, width / n_kv_heads};
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
               Tensor& out) {
  std::array<const float*, 2> blocks;
  attention(q, contiguous_rows(k, v, n_kv_heads, blocks), n_heads, n_kv_heads, pos0, out);
}

}  // namespace infer::cpu
#endif  // HWY_ONCE
