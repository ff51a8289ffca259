// The small-n matrix product of small_matmul.hpp, written with xsimd registers (xsimd::batch:
// 16 floats on AVX-512, 8 on AVX2, chosen when compiling with -march=native).
//
// The work is cut into tiles of kTileW weight rows × kTileX activation rows. A tile keeps one
// accumulator pair per (weight row, activation row) in registers and walks k in steps of kLanes:
// each step loads kTileW pieces of weights and kTileX pieces of activations and does
// kTileW · kTileX fused multiply-adds with them. The more products per load, the closer the
// kernel gets to the arithmetic limit once n is large enough for arithmetic to matter; at n = 1
// it only has to keep up with memory.
#include "tensor/small_matmul.hpp"

#include <algorithm>
#include <cstddef>

#include <xsimd/xsimd.hpp>

#include "tensor/load_piece.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::cpu {
namespace {

using Vec = xsimd::batch<float>;
constexpr int kVec = static_cast<int>(Vec::size);  // floats in one register
// Each dot product is summed in kLanes independent lanes (two registers), so that consecutive
// fused multiply-adds into one accumulator do not wait for each other.
constexpr int kLanes = 2 * kVec;
// Tiles sized to the register file: kTileW · kTileX · 2 accumulators, plus one register per
// row of x and one for the weight piece in use (a step of k goes in two halves, see tile()).
// With 32 registers (AVX-512, measured before a step was split in halves) 4×2 and 8×1 were best
// of 8×1, 6×2, 4×2, 4×3, 3×3 and 2×4 and equal within noise. With 16 (AVX2, the course machine), 2×3: 12 accumulators + 3 + 1; timed against
// the 2×2 tile on a decode step's products at the model's shapes (both in turn in one process,
// 2 threads): 0.93× the time for 16 rows of x, 0.98× for 2, 4 and 8, 1.00× for 1 and 5. Larger
// tiles ran out of registers, and the compiler reloaded weights from memory for every row.
#if defined(__AVX512F__)
constexpr int kTileW = 4, kTileX = 2;  // 16 accumulators + 2 + 1 of 32 registers
#else
constexpr int kTileW = 2, kTileX = 3;  // 12 accumulators + 3 + 1 of 16 registers
#endif
// One row of x (a decode token) has nothing to share between rows of x, and it is fastest read
// the simplest way: one weight row at a time, front to back, with no software prefetch. Each
// thread's share is then one ascending stream of addresses, which the CPU's own prefetchers
// follow better than our requests for rows ahead. Timed on the AVX2 machine (2 threads, a decode
// step's fp32 products at the model's shapes, ~538 MB, in turn in one process, medians of 30
// rounds): 0.957–0.961× the time of 4 rows per tile with prefetch, the kernel before (95–97% of
// the plain read loop against 88–90%); 2 rows without prefetch 1.15×, 4 rows 1.07×; cells of 4
// or 64 rows instead of 16 1.01× and 1.03×. A whole decode step (chapter 03 cache, context 128)
// took 0.949× the time. Batches (n ≥ 2) still need the prefetch: without it n = 2, 4 and 16 took
// 1.27×, 1.39× and 1.13× the time. bench_decode (table 1) prints the fraction of read bandwidth
// a decode step streams at.
constexpr int kDecodeTileW = 1;
constexpr bool kDecodePrefetch = false;

// Offset of a row: in 64 bits, as row × stride may pass 2³¹.
int64_t at(int row, int stride) { return int64_t{row} * stride; }

// One tile: y[t, j] for the TW weight rows w_j and TX activation rows x_t given.
//   Σ_i w_j[i] · x_t[i]: lane l of the two registers sums the products at i ≡ l (mod kLanes) in
//   order of i; the two registers are added, their lanes summed (xsimd::hadd), then the last
//   k mod kLanes products (the tail) are added one by one.
// The order of that sum depends only on k, never on TW, TX or the tile a pair falls in.
// A piece of w is used by TX rows of x and a piece of x by TW weight rows: load_piece keeps
// such a piece in its register (without it a 2 × 2 tile loaded 12 registers per step instead of
// 8, and ran 1.14–1.25× slower for n = 2 … 16). Each accumulator still sees its multiply-adds in
// order of i, so splitting a step in halves changes no bit.
// `ahead`, when not null, is the first of TW weight rows (k floats apart) that a later tile
// will read: each step of k asks for the same 64 bytes of each of them (see kPrefetchTiles).
template <int TW, int TX>
void tile(const float* const (&w)[TW], const float* const (&x)[TX], int k, float (&out)[TW][TX],
          const float* ahead) {
  Vec acc[TW][TX][2];
  for (auto& row : acc)
    for (auto& pair : row) pair[0] = pair[1] = Vec(0.0f);
  int i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    if (ahead)
      for (int a = 0; a < TW; ++a) __builtin_prefetch(ahead + at(a, k) + i);  // kLanes floats = 64 bytes
    // The step in two halves, one register of each row at a time: only TX pieces of x and one
    // piece of w are live at once, which leaves room for more accumulators (a larger tile).
    for (int half = 0; half < 2; ++half) {
      Vec xv[TX];
      for (int b = 0; b < TX; ++b) xv[b] = load_piece<TW, Vec>(x[b] + i + half * kVec);
      for (int a = 0; a < TW; ++a) {
        const Vec wv = load_piece<TX, Vec>(w[a] + i + half * kVec);
        for (int b = 0; b < TX; ++b) acc[a][b][half] = xsimd::fma(wv, xv[b], acc[a][b][half]);
      }
    }
  }
  for (int a = 0; a < TW; ++a)
    for (int b = 0; b < TX; ++b) {
      float sum = xsimd::hadd(acc[a][b][0] + acc[a][b][1]);
      for (int j = i; j < k; ++j) sum = std::fma(w[a][j], x[b][j], sum);  // the tail
      out[a][b] = sum;
    }
}

// While a tile's weight rows are multiplied, the rows of the tile after the next are asked for
// (software prefetch), a line per row in every step of the k loop and again in every pass over
// the activation rows. Spread out like that, the requests keep memory busy while the tile
// computes. Asking for all of a tile's lines at once before its first pass, as this kernel
// did before, left memory idle during the later passes, and a decode step of B = 4 or 16
// sequences cost visibly more than one of B = 1. bench_batching prints step(B) ÷ step(1).
constexpr int kPrefetchTiles = 2;

// One tile's outputs y[t + b, j + a] (a < TW, b < TX): weight rows wr (rows j … j + TW − 1 of w)
// against rows t … t + TX − 1 of x.
template <int TW, int TX>
void tile_at(const float* const (&wr)[TW], const float* x, int t, int j, int m, int k, float* y, const float* ahead) {
  const float* xr[TX];
  for (int b = 0; b < TX; ++b) xr[b] = x + at(t + b, k);
  float out[TW][TX];
  tile<TW, TX>(wr, xr, k, out, ahead);
  for (int a = 0; a < TW; ++a)
    for (int b = 0; b < TX; ++b) y[at(t + b, m) + j + a] = out[a][b];
}

// Weight rows [first, last) against every activation row, TW weight rows at a time, asking for
// the rows kPrefetchTiles tiles ahead when Prefetch is set.
template <int TW, bool Prefetch>
void weight_rows(int first, int last, int n, int m, int k, const float* w, const float* x, float* y) {
  for (int j = first; j + TW <= last; j += TW) {
    const float* wr[TW];
    for (int a = 0; a < TW; ++a) wr[a] = w + at(j + a, k);
    const int next = j + kPrefetchTiles * TW;  // past `last` too: a thread's next cell usually follows this one
    const float* ahead = Prefetch && next + TW <= m ? w + at(next, k) : nullptr;
    if (ahead)  // the last line of each row: the k loop's steps miss it when a row starts mid-line
      for (int a = 0; a < TW; ++a) __builtin_prefetch(ahead + at(a, k) + k - 1);
    // Rows of x in tiles of kTileX; two left over go as one tile of 2 (for n = 5 and 8 that took
    // 0.91-0.92× the time of two tiles of 1), one as a tile of 1.
    int t = 0;
    for (; t + kTileX <= n; t += kTileX) tile_at<TW, kTileX>(wr, x, t, j, m, k, y, ahead);
    if (kTileX > 2 && t + 2 <= n) {
      tile_at<TW, 2>(wr, x, t, j, m, k, y, ahead);
      t += 2;
    }
    for (; t < n; ++t) tile_at<TW, 1>(wr, x, t, j, m, k, y, ahead);
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

void matmul_small_n(int n, int m, int k, const float* w, const float* x, float* y) {
  // The tile's width changes only which rows are computed together, never a sum's order.
  if (n == 1) split_weight_rows<kDecodeTileW, kDecodePrefetch>(n, m, k, w, x, y);
  else split_weight_rows<kTileW, true>(n, m, k, w, x, y);
}

}  // namespace infer::cpu
