// The small-n matrix product of small_matmul.hpp, written with Highway's SIMD registers: 16
// floats on AVX-512, 8 on AVX2, 4 on SSE4 and NEON. The file is compiled once per SIMD target
// (foreach_target.h) and each call runs the best one this CPU has (tensor/simd_target.hpp).
//
// The work is cut into tiles of kTileW weight rows × kTileX activation rows. A tile keeps one
// accumulator register per (weight row, activation row) and walks k one register of floats at a
// time: each step loads kTileW pieces of weights and kTileX pieces of activations and does
// kTileW · kTileX fused multiply-adds with them. The more products per load, the closer the
// kernel gets to the arithmetic limit once n is large enough for arithmetic to matter; at n = 1
// it only has to keep up with memory. When x needs several tiles, k goes in pieces (kPiece) so
// that what the tiles share stays in L1.
#include "tensor/small_matmul.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tensor/small_matmul.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target
#include <hwy/highway.h>

#include "tensor/load_piece-inl.h"
#include "tensor/simd_target.hpp"
#include "tensor/thread_pool.hpp"

HWY_BEFORE_NAMESPACE();
namespace infer::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;  // a whole register of floats
using Vec = hn::Vec<D>;
constexpr int kVec = static_cast<int>(hn::MaxLanes(D()));  // floats in one register: the lanes of a sum
// Tiles sized to the register file: kTileW · kTileX accumulators, plus one register per row of x
// and one for the weight piece in use. On AVX2 (16 registers) 4 × 3 uses all sixteen: 12
// multiply-adds for 7 loads. Loads, not multiply-adds, set a tile's pace, so the tile with the
// most multiply-adds per load that still fits the register file wins; one register more (3 × 4
// needs 17) spills to the stack and loses much more than it gains. On AVX-512 (32 registers) the
// same tile leaves half the file unused. The history of the tiles tried, and the command that
// measures the kernel (bench_matmul), are in docs/performance.md.
constexpr int kTileW = 4, kTileX = 3;
// One row of x (a decode token) has nothing to share between rows of x, and it is fastest read
// the simplest way: one weight row at a time, front to back, with no software prefetch. Each
// thread's share is then one ascending stream of addresses, which the CPU's own prefetchers
// follow better than our requests for rows ahead. Batches (n ≥ 2) are different: their tiles
// compute long enough between loads that memory would sit idle without the requests ahead, so
// they keep the prefetch. bench_decode (table 1) prints the fraction of read bandwidth a decode
// step streams at.
// With one register per sum, a row's multiply-adds wait for each other (one dependency chain:
// on AVX2, 8 floats per 4 cycles, ~26 GB/s per core at 3.2 GHz). That is still faster than
// memory feeds one core, so a decode row needs no second chain, and batches gain from the
// registers it frees for a larger tile. (The orders tried before this one: docs/performance.md.)
constexpr int kDecodeTileW = 1;
constexpr bool kDecodePrefetch = false;

// Offset of a row: in 64 bits, as row × stride may pass 2³¹.
int64_t at(int row, int stride) { return int64_t{row} * stride; }

// The multiply-adds of one tile over the steps [i0, i1) of k (whole registers): TW weight rows
// w_j against the TX activation rows x_t from x0 on (k floats apart), continuing the running sums
// sums[t][j] (one register each).
//   Lane l of sums[t][j] adds the products w_j[i] · x_t[i] at i ≡ l (mod kVec) in order of i, so
//   cutting k into pieces, or rows into tiles, changes no bit of any sum.
// A piece of w is used by TX rows of x and a piece of x by TW weight rows: load_piece keeps
// such a piece in its register, so that the compiler does not load it again for every use (a
// 2 × 2 tile would load 12 registers per step instead of 8).
// `ahead`, when not null, is the first of TW weight rows (k floats apart) that a later tile
// will read: every `ahead_every` floats of k the tile asks for the next 64 bytes of each of them
// (see kPrefetchTiles).
template <int TW, int TX>
void tile_steps(const float* const (&w)[TW], const float* x0, int k, int i0, int i1, Vec (*sums)[TW],
                const float* ahead, int ahead_every) {
  const float* x[TX];
  for (int b = 0; b < TX; ++b) x[b] = x0 + at(b, k);
  Vec acc[TW][TX];  // the sums in registers while the steps run
  for (int a = 0; a < TW; ++a)
    for (int b = 0; b < TX; ++b) acc[a][b] = sums[b][a];
  for (int i = i0; i < i1; i += kVec) {
    if (ahead && (i & (ahead_every - 1)) == 0)  // a power of two: no division in the loop
      for (int a = 0; a < TW; ++a) __builtin_prefetch(ahead + at(a, k) + i);
    Vec xv[TX];
    for (int b = 0; b < TX; ++b) xv[b] = load_piece<TW>(D(), x[b] + i);
    for (int a = 0; a < TW; ++a) {
      const Vec wv = load_piece<TX>(D(), w[a] + i);
      for (int b = 0; b < TX; ++b) acc[a][b] = hn::MulAdd(wv, xv[b], acc[a][b]);
    }
  }
  for (int a = 0; a < TW; ++a)
    for (int b = 0; b < TX; ++b) sums[b][a] = acc[a][b];
}

// While a tile's weight rows are multiplied, the rows of the tile after the next are asked for
// (software prefetch), a line per row in every step of the k loop and again in every pass over
// the activation rows. Spread out like that, the requests keep memory busy while the tile
// computes. Asking for all of a tile's lines at once before its first pass, as this kernel
// did before, left memory idle during the later passes, and a decode step of B = 4 or 16
// sequences cost visibly more than one of B = 1. bench_batching prints step(B) ÷ step(1).
// How often to ask depends on how many passes there are: a request takes a load slot, and the
// tiles are bound by their loads. With three passes or more (n > 6) every line is asked for
// in several passes, so once per 64-byte line (16 floats) per pass is enough; with one or two
// passes, twice per line (every 8 floats) makes sure each line is asked for early.
constexpr int kPrefetchTiles = 2;
int ahead_every(int n) { return n > 2 * kTileX ? 16 : 8; }  // floats of k between requests

// When the rows of x take more than one pass over a tile of weight rows, k goes in pieces of
// kPiece floats, each piece through every pass before the next: a piece of the weight rows
// (4 × 512 bytes) and of x (16 × 512 bytes at most) then stays in L1 between the passes, where
// whole rows (x alone 36 KB for n = 16, k = 576) did not. With one pass (n ≤ 3) there is
// nothing to keep between passes, and k goes whole.
constexpr int kPiece = 128;

// Weight rows [first, last) against every activation row, TW weight rows at a time, asking for
// the rows kPrefetchTiles tiles ahead when Prefetch is set.
template <int TW, bool Prefetch>
void weight_rows(int first, int last, int n, int m, int k, const float* w, const float* x, float* y) {
  const int whole = k / kVec * kVec;  // the steps of whole registers; the rest is the tail
  const int piece = n > kTileX ? kPiece : whole;
  const int every = ahead_every(n);
  for (int j = first; j + TW <= last; j += TW) {
    const float* wr[TW];
    for (int a = 0; a < TW; ++a) wr[a] = w + at(j + a, k);
    const int next = j + kPrefetchTiles * TW;  // past `last` too: a thread's next cell usually follows this one
    const float* ahead = Prefetch && next + TW <= m ? w + at(next, k) : nullptr;
    if (ahead)  // the last line of each row: the k loop's steps miss it when a row starts mid-line
      for (int a = 0; a < TW; ++a) __builtin_prefetch(ahead + at(a, k) + k - 1);
    Vec sums[kSmallN][TW];  // y[t, j + a] as kVec partial sums, for every row t of x
    for (int t = 0; t < n; ++t)
      for (auto& sum : sums[t]) sum = hn::Zero(D());
    for (int i0 = 0; i0 < whole; i0 += piece) {
      const int i1 = std::min(i0 + piece, whole);
      // Rows of x in tiles of kTileX; two left over go as one tile of 2 (one load of each weight
      // piece for both, not two), one as a tile of 1.
      int t = 0;
      for (; t + kTileX <= n; t += kTileX)
        tile_steps<TW, kTileX>(wr, x + at(t, k), k, i0, i1, sums + t, ahead, every);
      if (t + 2 <= n) {
        tile_steps<TW, 2>(wr, x + at(t, k), k, i0, i1, sums + t, ahead, every);
        t += 2;
      }
      for (; t < n; ++t) tile_steps<TW, 1>(wr, x + at(t, k), k, i0, i1, sums + t, ahead, every);
    }
    // Each sum: its lanes added (SumOfLanes), then the last k mod kVec products one by one.
    for (int t = 0; t < n; ++t)
      for (int a = 0; a < TW; ++a) {
        float sum = hn::GetLane(hn::SumOfLanes(D(), sums[t][a]));
        for (int i = whole; i < k; ++i) sum = std::fma(wr[a][i], x[at(t, k) + i], sum);  // the tail
        y[at(t, m) + j + a] = sum;
      }
  }
}

// The threads split the weight rows in shares (parallel_for_shares): each walks its own share
// front to back in cells of 16 rows, so that its reads form one ascending stream, which the
// CPU's prefetchers follow and a batch's prefetches above run on from one cell into the next;
// a thread whose share is done takes cells from the back of the other's, so at the end of each
// of a decode step's ~211 products the first to finish waits for at most one cell. (Before,
// chunks shrinking towards the end were claimed from the top of the matrix down: each began
// where no prefetch had run, and the prefetches at its end asked for rows already done.)
template <int TW, bool Prefetch>
void split_weight_rows(int n, int m, int k, const float* w, const float* x, float* y) {
  const auto body = [&](int64_t first, int64_t last) {
    const int whole = static_cast<int>(first + (last - first) / TW * TW);
    weight_rows<TW, Prefetch>(static_cast<int>(first), whole, n, m, k, w, x, y);
    weight_rows<1, Prefetch>(whole, static_cast<int>(last), n, m, k, w, x, y);  // rows left when m % TW ≠ 0
  };
  parallel_for_shares(m, TW, 16, body);
}

}  // namespace

// One target's product (matmul_small_n below checks n and picks the target).
void MatmulSmallN(int n, int m, int k, const float* w, const float* x, float* y) {
  // The tile's width changes only which rows are computed together, never a sum's order.
  if (n == 1) split_weight_rows<kDecodeTileW, kDecodePrefetch>(n, m, k, w, x, y);
  else split_weight_rows<kTileW, true>(n, m, k, w, x, y);
}

}  // namespace infer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer::cpu {

HWY_EXPORT(MatmulSmallN);

void matmul_small_n(int n, int m, int k, const float* w, const float* x, float* y) {
  if (n > kSmallN)
    throw std::invalid_argument("matmul_small_n: more than " + std::to_string(kSmallN) + " rows of x");
  if (n <= 0) return;
  simd::init();
  HWY_DYNAMIC_DISPATCH(MatmulSmallN)(n, m, k, w, x, y);
}

}  // namespace infer::cpu
#endif  // HWY_ONCE
