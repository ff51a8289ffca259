// The CPU kernels of int8_activations.hpp: x rounded to int8 once per product, then integer dot
// products of 32 codes at a time (AVX2 intrinsics, with AVX-512 VNNI's one-instruction dot
// product where the CPU has it; Highway's portable int16 products on the 128-bit targets).
//
// Like packed_kernels.cpp, the file is compiled once per SIMD target by Highway's
// foreach_target.h and each call runs the best target this CPU has (lib's tensor/simd_target.hpp):
// the AVX2, AVX3 and AVX3_DL targets get the intrinsics below (AVX3_DL with vpdpbusd), SSE4 and
// NEON a version in Highway's operations (8 int16 products at a time).
//
// One weight block of 32 and one block of x make one 8-lane vector of int32 partial sums:
//
//   q8_0   32 signed codes: |qw| (vpsignb qw, qw) times qx with qw's sign (vpsignb qx, qw),
//          because the byte product instruction takes one operand unsigned
//   q4_1   16 bytes → 32 unsigned nibbles: low nibbles (weights 0–15) in the low 128-bit half,
//          high nibbles (weights 16–31) in the high half — already unsigned
//   nf4    the same nibble split gives the even weights of 32 (low nibbles) and the odd ones;
//          vpshufb looks all 32 up in the int8 level table at once; then as q8_0. x is reordered
//          to match (per block: its 16 even columns, then its 16 odd ones)
//
// and the block adds (its scales) × (those sums, as fp32) to an 8-lane fp32 accumulator. Up to 4
// rows of x share each weight block's load and decoding (a small batch, dot_rows). With fewer
// than 4 (decode), q4_1 and nf4 decode two blocks per register instead (dot_row_pairs: about half
// the instructions per weight). Threads split the rows of Ŵ, as in packed_kernels.cpp.
#include "int8_activations.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "gguf/ggml_types.hpp"
#include "nf4.hpp"
#include "tensor/simd_target.hpp"
#include "tensor/thread_pool.hpp"

#ifndef CH06_INT8_ACTIVATIONS_SHARED_  // the part compiled once, not per target
#define CH06_INT8_ACTIVATIONS_SHARED_
namespace infer::quant {
namespace {

constexpr int64_t kBlock = 32;
constexpr float kInverse127 = 1.0f / 127.0f;  // nf4: T = round(127·L), so ŵ ≈ a · (1/127) · T

// Bytes of one row of Ŵ's codes (and, for q8_0/q4_1, its scales).
int64_t row_stride(PackedFormat format, int64_t cols) {
  switch (format) {
    case PackedFormat::q8_0: return cols / kBlock * 34;
    case PackedFormat::q4_1: return cols / kBlock * 20;
    default: return cols / 2;  // nf4: two codes per byte
  }
}

// Which column of a block the kernels' slot j (0–31) of a decoded block holds: the low nibbles
// of its 16 code bytes come first, then the high ones. q4_1's byte j holds weights j and j + 16,
// so slot j is column j; nf4's byte j holds weights 2j and 2j + 1: the even columns, then the odd.
int64_t column_of_slot(PackedFormat format, int64_t j) {
  if (format == PackedFormat::q4_1) return j;
  return j < 16 ? 2 * j : 2 * (j - 16) + 1;
}

// A permutation applied to every group of `size` codes of x: out[s] = in[from[s]].
template <std::size_t size>
void permute_groups(Int8Activations& a, const std::array<uint8_t, size>& from, int64_t groups_per_row) {
  std::array<int8_t, size> tmp;
  for (int64_t r = 0; r < a.n; ++r)
    for (int64_t g = 0; g < groups_per_row; ++g) {
      int8_t* group = a.q.data() + r * a.cols + g * static_cast<int64_t>(size);
      for (std::size_t s = 0; s < size; ++s) tmp[s] = group[from[s]];
      std::copy(tmp.begin(), tmp.end(), group);
    }
}

// x's codes reordered to match the kernels' decoded weights, once per product:
//   by blocks (dot_rows, nf4 only: q4_1's order is already x's): slot j of each block;
//   by pairs of blocks (dot_row_pairs, q4_1 and nf4 with fewer than 4 rows of x): one register
//   holds both blocks' low nibbles, another their high ones, so per pair: slots 0–15 of block
//   b, slots 0–15 of block b + 1, slots 16–31 of b, slots 16–31 of b + 1. (An odd last block
//   stays in x's order.)
void reorder_by_blocks(Int8Activations& a, PackedFormat format) {
  std::array<uint8_t, kBlock> from;
  for (int64_t j = 0; j < kBlock; ++j) from[j] = static_cast<uint8_t>(column_of_slot(format, j));
  permute_groups(a, from, a.cols / kBlock);
}

void reorder_by_pairs(Int8Activations& a, PackedFormat format) {
  std::array<uint8_t, 2 * kBlock> from;
  for (int64_t s = 0; s < 2 * kBlock; ++s) {
    const int64_t block = s / 16 % 2, slot = s / 32 * 16 + s % 16;
    from[s] = static_cast<uint8_t>(block * kBlock + column_of_slot(format, slot));
  }
  permute_groups(a, from, a.cols / (2 * kBlock));
}

}  // namespace
}  // namespace infer::quant
#endif  // CH06_INT8_ACTIVATIONS_SHARED_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "06_quantization/packed/cpu/int8_activations.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target
#include <hwy/highway.h>
#if HWY_ARCH_X86
#include <immintrin.h>
#endif

#include "cpu/fp16_scale-inl.h"

// This target's kernels: the AVX2 intrinsics (AVX2 and every AVX-512 target), or Highway's 128-bit ones.
#undef INFER_INT8_X86
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define INFER_INT8_X86 1
#else
#define INFER_INT8_X86 0
#endif

HWY_BEFORE_NAMESPACE();
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL
// Highway's AVX3_DL target is chosen only on CPUs with AVX-512 VNNI (Ice Lake, Zen 4 and later),
// but its compiler flags name only the VEX form (avxvnni); the EVEX vpdpbusd below needs these.
#pragma GCC target("avx512vnni,avx512vl")
#endif
namespace infer::quant::HWY_NAMESPACE {
namespace {

#if INFER_INT8_X86

// 8 int32 lanes, each the sum of 4 adjacent products u[k]·s[k] (u read as unsigned bytes, s as
// signed). No pair of products reaches the 16-bit limit of vpmaddubsw here (|u| ≤ 128, |s| ≤ 127),
// so both ways give the same exact sums.
inline __m256i dot_u8_i8(__m256i u, __m256i s) {
#if HWY_TARGET <= HWY_AVX3_DL
  // Written out with {evex} (%{ %} in GCC asm): the AVX-512 VNNI encoding. The target's flags also enable AVX-VNNI
  // (the VEX form of the same instruction), and GCC then emits the shorter VEX form for the
  // intrinsic, which CPUs with AVX-512 VNNI but no AVX-VNNI (Zen 4, Ice Lake) do not have: SIGILL.
  // AT&T order: acc += Σ u (unsigned bytes) · s (signed bytes), 4 products per int32 lane.
  __m256i acc = _mm256_setzero_si256();
  asm("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

float sum_lanes(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// One weight block, decoded once for all NX rows of x.
struct WeightBlock {
  __m256i codes;     // 32 codes: signed (q8_0, nf4 levels) or unsigned nibbles (q4_1)
  __m256i abs;       // signed formats: |codes|
  float d = 0;       // q8_0, nf4: the scale the integer sum is multiplied by (before dx)
  __m128 dm;         // q4_1: [d, m, 0, 0], both fp16 converted by one instruction
};

template <PackedFormat F>
inline WeightBlock decode_block(const uint8_t* row, int64_t b, const uint8_t* nf4_scales, __m256i nf4_table) {
  WeightBlock w;
  if constexpr (F == PackedFormat::q8_0) {
    const uint8_t* blk = row + 34 * b;
    w.d = load_scale(blk);
    w.codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    w.abs = _mm256_sign_epi8(w.codes, w.codes);
  } else {
    const uint8_t* bytes = F == PackedFormat::q4_1 ? row + 20 * b + 4 : row + 16 * b;
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
    const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
    if constexpr (F == PackedFormat::q4_1) {
      uint32_t dm;
      std::memcpy(&dm, row + 20 * b, 4);
      w.dm = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dm)));
      w.codes = nibbles;
    } else {  // nf4: one absmax per 64 weights = 2 blocks
      w.d = load_scale(nf4_scales + 2 * (b / 2)) * kInverse127;
      w.codes = _mm256_shuffle_epi8(nf4_table, nibbles);
      w.abs = _mm256_sign_epi8(w.codes, w.codes);
    }
  }
  return w;
}

// y[i … i + NX, r] for row r of Ŵ.
template <PackedFormat F, int NX>
void dot_rows(const uint8_t* row, const uint8_t* nf4_scales, const Int8Activations& a, int64_t i, float* y,
              int64_t y_stride) {
  const int64_t blocks = a.cols / kBlock;
  const int8_t* q = a.q.data();
  const Int8Activations::Block* xblocks = a.blocks.data();
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(nf4_levels_int8())));
  // One row of x alone keeps two accumulators (even and odd blocks), so that a block's
  // multiply-add need not wait for the previous one's.
  constexpr int U = NX == 1 ? 2 : 1;
  __m256 acc[U][NX];
  __m128 offset[U][NX];  // q4_1: lane 1 sums m · Σx
  for (int u = 0; u < U; ++u)
    for (int k = 0; k < NX; ++k) {
      acc[u][k] = _mm256_setzero_ps();
      offset[u][k] = _mm_setzero_ps();
    }
  // Block b into accumulator set u (u a compile-time constant below, so the accumulators stay in
  // registers: indexed by b % U at run time, they went through memory on every block).
  const auto accumulate = [&](int64_t b, int u) {
    const WeightBlock w = decode_block<F>(row, b, nf4_scales, table);
#pragma GCC unroll 4
    for (int k = 0; k < NX; ++k) {
      const int64_t xb = (i + k) * blocks + b;  // block b of x's row i + k
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + xb * kBlock));
      const __m256i sums = F == PackedFormat::q4_1 ? dot_u8_i8(w.codes, qx) : dot_u8_i8(w.abs, _mm256_sign_epi8(qx, w.codes));
      if constexpr (F == PackedFormat::q4_1) {
        // [d, m] × [dx, Σx] = [d·dx, m·Σx]: the block's scale and its offset term at once
        const __m128 x_scale_sum = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(xblocks + xb)));
        const __m128 scale_offset = _mm_mul_ps(w.dm, x_scale_sum);
        acc[u][k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_broadcastss_ps(scale_offset), acc[u][k]);
        offset[u][k] = _mm_add_ps(offset[u][k], scale_offset);
      } else {
        acc[u][k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(w.d * xblocks[xb].scale), acc[u][k]);
      }
    }
  };
  int64_t b = 0;
  for (; b + U <= blocks; b += U)
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) accumulate(b + u, u);
  for (; b < blocks; ++b) accumulate(b, 0);
  for (int k = 0; k < NX; ++k) {
    __m256 total = acc[0][k];
    __m128 total_offset = offset[0][k];
    for (int u = 1; u < U; ++u) {
      total = _mm256_add_ps(total, acc[u][k]);
      total_offset = _mm_add_ps(total_offset, offset[u][k]);
    }
    y[(i + k) * y_stride] = sum_lanes(total) + _mm_cvtss_f32(_mm_movehdup_ps(total_offset));  // + lane 1
  }
}

// ---- one row of x: two blocks per register (q4_1, nf4) ----
//
// One register holds two blocks' 32 code bytes: q4_1's bytes of blocks b and b + 1 (16 each,
// after their scales), nf4's 32 bytes as they lie. `& 15` and `>> 4` give two registers of 32
// codes, each half from one block, and x comes reordered to match (reorder_by_pairs). Their byte
// products sum to 8 int32 lanes: lanes 0–3 add up to block b's Σ qw·qx, lanes 4–7 to block
// b + 1's, and one fused multiply-add scales each half by its own factor. Per 64 weights that is
// about half the instructions of two single blocks (dot_rows<F, 1>).
//
// The factors come 4 blocks at a time: q4_1's [d, m] of 4 blocks (16 fp16 bytes gathered from
// 4 blocks) times x's [dx, Σx] of the same 4 blocks (one 8-float load) give d·dx and m·Σx for
// all 4 in one multiply; nf4's two absmax (one per 64 weights, adjacent) times 1/127 and dx.
// A register of 8 factors holds [f_b, o_b, f_b+1, o_b+1, f_b+2, …] (o: q4_1's offset term, a
// sum of its own), and a permute spreads f_b and f_b+1 (or f_b+2, f_b+3) over the two halves.

// Σ qw·qx of blocks b and b + 1 of a row (32 code bytes), as fp32: lanes 0–3 block b's parts.
template <PackedFormat F>
inline __m256 pair_sums(const uint8_t* row, int64_t b, const int8_t* qx, __m256i nf4_table) {
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  __m256i packed;
  if constexpr (F == PackedFormat::q4_1)
    packed = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 20 * (b + 1) + 4)),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 20 * b + 4)));
  else
    packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * b));
  const __m256i lo = _mm256_and_si256(packed, low_nibbles);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibbles);
  const __m256i qlo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx));
  const __m256i qhi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx + 32));
  if constexpr (F == PackedFormat::q4_1) {
    // Unsigned nibbles: the 16-bit pairs of low and high add up without overflow
    // (|sum| ≤ 4 · 15 · 127 = 7 620), so one vpmaddwd makes the int32 sums.
    const __m256i pairs16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, qlo), _mm256_maddubs_epi16(hi, qhi));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs16, _mm256_set1_epi16(1)));
  } else {
    // Signed levels: as q8_0 (|T| · qx with T's sign), each register on its own to int32,
    // since two 16-bit pairs of products up to 127 · 127 could overflow.
    const __m256i wl = _mm256_shuffle_epi8(nf4_table, lo), wh = _mm256_shuffle_epi8(nf4_table, hi);
    return _mm256_cvtepi32_ps(_mm256_add_epi32(dot_u8_i8(_mm256_sign_epi8(wl, wl), _mm256_sign_epi8(qlo, wl)),
                                               dot_u8_i8(_mm256_sign_epi8(wh, wh), _mm256_sign_epi8(qhi, wh))));
  }
}

// The factors of blocks b … b + kCount (4, or 2 with the upper half zero), laid out as above.
template <PackedFormat F, int kCount>
inline __m256 quad_factors(const uint8_t* row, const uint8_t* nf4_scales, const Int8Activations::Block* xblocks,
                           int64_t b) {
  const auto* xs = reinterpret_cast<const float*>(xblocks + b);  // [dx, Σx] per block
  const __m256 x_factors = kCount == 4 ? _mm256_loadu_ps(xs) : _mm256_zextps128_ps256(_mm_loadu_ps(xs));
  const auto word = [](const uint8_t* p) {  // 4 bytes: q4_1's [d, m] or two nf4 absmax, as fp16
    uint32_t w;
    std::memcpy(&w, p, 4);
    return static_cast<int>(w);
  };
  if constexpr (F == PackedFormat::q4_1) {
    const uint8_t* blk = row + 20 * b;
    const __m128i dm = kCount == 4 ? _mm_setr_epi32(word(blk), word(blk + 20), word(blk + 40), word(blk + 60))
                                    : _mm_setr_epi32(word(blk), word(blk + 20), 0, 0);
    return _mm256_mul_ps(_mm256_cvtph_ps(dm), x_factors);
  } else {  // one absmax per 64 weights: blocks b, b + 1 share the first, b + 2, b + 3 the second
    const uint8_t* p = nf4_scales + 2 * (b / 2);
    uint16_t first;  // with 2 blocks, only the first: the next two bytes are the next row's
    std::memcpy(&first, p, 2);
    const __m128i absmax = _mm_cvtsi32_si128(kCount == 4 ? word(p) : first);
    const __m256 a = _mm256_castps128_ps256(_mm_mul_ps(_mm_cvtph_ps(absmax), _mm_set1_ps(kInverse127)));
    return _mm256_mul_ps(_mm256_permutevar8x32_ps(a, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)), x_factors);
  }
}

// Σ_j code_j · qx_j over one q4_1 block, exactly in integers: its 16 bytes hold weights j (low
// nibble) and j + 16 (high nibble). For an odd last block of the two-block kernel.
int32_t q4_1_codes_dot(const uint8_t* codes, const int8_t* qx) {
  int32_t s = 0;
  for (int64_t j = 0; j < 16; ++j) s += (codes[j] & 15) * qx[j] + (codes[j] >> 4) * qx[16 + j];
  return s;
}

// y[i, r] for row r of Ŵ (q4_1 or nf4), x reordered by reorder_by_pairs.
template <PackedFormat F>
void dot_row_pairs(const uint8_t* row, const uint8_t* nf4_scales, const Int8Activations& a, int64_t i, float* y,
                   int64_t y_stride) {
  const int64_t blocks = a.cols / kBlock;
  const int8_t* q = a.q.data() + i * a.cols;
  const Int8Activations::Block* xblocks = a.blocks.data() + i * blocks;
  const __m256i table = F == PackedFormat::nf4  // the 16 levels in both 128-bit halves (vpshufb looks up per half)
                            ? _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(nf4_levels_int8())))
                            : _mm256_setzero_si256();
  const __m256i first = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), second = _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  // two chains of multiply-adds
  __m256 offsets = _mm256_setzero_ps();  // q4_1: the odd lanes sum m · Σx
  const int64_t paired = blocks / 2 * 2;
  for (int64_t b = 0; b < paired; b += 4) {
    const bool four = b + 4 <= paired;
    const __m256 factors = four ? quad_factors<F, 4>(row, nf4_scales, xblocks, b) : quad_factors<F, 2>(row, nf4_scales, xblocks, b);
    if constexpr (F == PackedFormat::q4_1) offsets = _mm256_add_ps(offsets, factors);
    acc[0] = _mm256_fmadd_ps(pair_sums<F>(row, b, q + b * kBlock, table), _mm256_permutevar8x32_ps(factors, first), acc[0]);
    if (four)
      acc[1] = _mm256_fmadd_ps(pair_sums<F>(row, b + 2, q + (b + 2) * kBlock, table),
                               _mm256_permutevar8x32_ps(factors, second), acc[1]);
  }
  float total = sum_lanes(_mm256_add_ps(acc[0], acc[1]));
  if constexpr (F == PackedFormat::q4_1) {
    alignas(32) float o[8];
    _mm256_store_ps(o, offsets);
    total += (o[1] + o[3]) + (o[5] + o[7]);
    if (paired < blocks) {  // an odd last block, in x's plain order
      const int64_t b = paired;
      const uint8_t* blk = row + 20 * b;
      const int32_t s = q4_1_codes_dot(blk + 4, q + b * kBlock);
      total += static_cast<float>(s) * (load_scale(blk) * xblocks[b].scale) + load_scale(blk + 2) * xblocks[b].sum;
    }
  }
  y[i * y_stride] = total;
}
constexpr bool kPairs = true;

#else  // 128-bit targets (SSE4, NEON): Highway's portable operations

// Without AVX2's byte dot products, codes and x are widened to int16 and multiplied 8 at a
// time into int32 sums, each adjacent pair of products added into one int32 lane
// (ReorderWidenMulAccumulate: pmaddwd on SSE4, smlal on NEON): 4 steps per block of 32, still
// exact integer sums. A decoded block is 4 vectors of 8 codes, in slot order (as decode_block
// above: q4_1's low nibbles, then its high ones; nf4's levels looked up 16 at a time by one byte
// shuffle, TableLookupBytes), and up to 4 rows of x share it; x is widened once per product.

constexpr bool kPairs = false;
// Declared only: matmul's call to it sits under `if constexpr (kPairs)`, which discards it.
template <PackedFormat F>
void dot_row_pairs(const uint8_t* row, const uint8_t* nf4_scales, const Int8Activations& a, int64_t i, float* y,
                   int64_t y_stride);

namespace hn = hwy::HWY_NAMESPACE;
using D8 = hn::Full128<int8_t>;
using D16 = hn::Full128<int16_t>;
using D32 = hn::Full128<int32_t>;
using DF = hn::Full128<float>;
using V16 = hn::Vec<D16>;

// 16 int8 values as two vectors of 8 int16: values 0–7, then 8–15.
HWY_INLINE void widen(hn::Vec<D8> v, V16& lo, V16& hi) {
  const hn::Full64<int8_t> half;
  lo = hn::PromoteTo(D16(), hn::LowerHalf(half, v));
  hi = hn::PromoteTo(D16(), hn::UpperHalf(half, v));
}

// Block b's 32 codes (slots 0–31 in w[0] … w[3]) and its scale d (q4_1 also its offset m).
template <PackedFormat F>
HWY_INLINE void decode_block(const uint8_t* row, const uint8_t* nf4_scales, int64_t b, hn::Vec<D8> nf4_table, V16 w[4],
                             float& d, float& m) {
  const D8 d8;
  if constexpr (F == PackedFormat::q8_0) {
    const uint8_t* blk = row + 34 * b;
    d = load_scale(blk);
    const auto* codes = reinterpret_cast<const int8_t*>(blk + 2);
    widen(hn::LoadU(d8, codes), w[0], w[1]);
    widen(hn::LoadU(d8, codes + 16), w[2], w[3]);
  } else {
    const hn::Full128<uint8_t> du8;
    const uint8_t* bytes = F == PackedFormat::q4_1 ? row + 20 * b + 4 : row + 16 * b;
    const auto packed = hn::LoadU(du8, bytes);
    hn::Vec<D8> lo = hn::BitCast(d8, hn::And(packed, hn::Set(du8, 0x0F)));  // slots 0–15
    hn::Vec<D8> hi = hn::BitCast(d8, hn::ShiftRight<4>(packed));           // slots 16–31
    if constexpr (F == PackedFormat::q4_1) {
      d = load_scale(row + 20 * b);
      m = load_scale(row + 20 * b + 2);
    } else {  // nf4: one absmax per 64 weights = 2 blocks
      d = load_scale(nf4_scales + 2 * (b / 2)) * kInverse127;
      lo = hn::TableLookupBytes(nf4_table, lo);
      hi = hn::TableLookupBytes(nf4_table, hi);
    }
    widen(lo, w[0], w[1]);
    widen(hi, w[2], w[3]);
  }
}

// x's codes as int16, [n, cols]: every row of Ŵ multiplies the same x, so it is widened once
// per product here rather than once per weight row in dot_rows.
void widen_x(Int8Activations& a) {
  a.q16.resize(a.q.size());
  for (std::size_t c = 0; c < a.q.size(); c += 16) {
    V16 lo, hi;
    widen(hn::LoadU(D8(), a.q.data() + c), lo, hi);
    hn::StoreU(lo, D16(), a.q16.data() + c);
    hn::StoreU(hi, D16(), a.q16.data() + c + 8);
  }
}

template <PackedFormat F, int NX>
void dot_rows(const uint8_t* row, const uint8_t* nf4_scales, const Int8Activations& a, int64_t i, float* y,
              int64_t y_stride) {
  const D8 d8;
  const D32 d32;
  const DF df;
  const int64_t blocks = a.cols / kBlock;
  const auto table = hn::LoadU(d8, nf4_levels_int8());
  hn::Vec<DF> acc[NX];
  float offset[NX] = {};  // q4_1: Σ m · Σx
  for (int k = 0; k < NX; ++k) acc[k] = hn::Zero(df);
  for (int64_t b = 0; b < blocks; ++b) {
    V16 w[4];
    float d = 0, m = 0;
    decode_block<F>(row, nf4_scales, b, table, w, d, m);
    for (int k = 0; k < NX; ++k) {
      const int64_t xb = (i + k) * blocks + b;  // block b of x's row i + k
      const int16_t* qx = a.q16.data() + xb * kBlock;  // widened once per product: widen_x
      V16 x[4];
      for (int q = 0; q < 4; ++q) x[q] = hn::LoadU(D16(), qx + 8 * q);
      auto odd = hn::Zero(d32);  // NEON keeps half of the products apart, here, until the end
      auto sums = hn::Zero(d32);
      for (int q = 0; q < 4; ++q) sums = hn::ReorderWidenMulAccumulate(d32, w[q], x[q], sums, odd);
      sums = hn::RearrangeToOddPlusEven(sums, odd);
      acc[k] = hn::MulAdd(hn::ConvertTo(df, sums), hn::Set(df, d * a.blocks[xb].scale), acc[k]);
      if constexpr (F == PackedFormat::q4_1) offset[k] += m * a.blocks[xb].sum;
    }
  }
  for (int k = 0; k < NX; ++k) y[(i + k) * y_stride] = hn::GetLane(hn::SumOfLanes(df, acc[k])) + offset[k];
}

#endif

// With fewer than 4 rows of x (decode), q4_1 and nf4 go two blocks at a time; 4 rows share each
// decoded block instead.
bool in_pairs(PackedFormat format, const Int8Activations& a) {
  return kPairs && format != PackedFormat::q8_0 && a.n < 4;
}

template <PackedFormat F>
void matmul(const uint8_t* w, int64_t rows, int64_t cols, const Int8Activations& a, float* y) {
  const int64_t stride = row_stride(F, cols);
  const uint8_t* codes = w;
  const uint8_t* scales = nullptr;
  if constexpr (F == PackedFormat::nf4) {
    scales = w;  // one fp16 absmax per 64 weights, then the codes
    codes = w + 2 * (rows * cols / 64);
  }
  // Ask for the bytes a few rows ahead: the hardware prefetcher alone leaves these short rows
  // waiting on memory (as in packed_kernels.cpp).
  const int64_t ahead = std::max<int64_t>(1, 4096 / stride);
  const auto body = [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      if (r + ahead < rows)
        for (int64_t off = 0; off < stride; off += 64) __builtin_prefetch(codes + (r + ahead) * stride + off);
      const uint8_t* row = codes + r * stride;
      const uint8_t* row_scales = F == PackedFormat::nf4 ? scales + 2 * (r * cols / 64) : nullptr;
      int64_t i = 0;
      if constexpr (F != PackedFormat::q8_0 && kPairs)
        if (in_pairs(F, a))
          for (; i < a.n; ++i) dot_row_pairs<F>(row, row_scales, a, i, y + r, rows);
      for (; i + 4 <= a.n; i += 4) dot_rows<F, 4>(row, row_scales, a, i, y + r, rows);
      for (; i < a.n; ++i) dot_rows<F, 1>(row, row_scales, a, i, y + r, rows);
    }
  };
  parallel_for_shares(rows, 1, 16, body);  // each thread streams its own share: see lib's small_matmul.cpp
}

// One block of 32 values of x: dx = max |x| / 127, codes round(x / dx) (to nearest, ties to even),
// and Σx. Every decode step rounds its activations ~200 times, on one thread while the other
// waits for the next product, so the block is done in registers where AVX2 allows.
#if INFER_INT8_X86
Int8Activations::Block quantize_block(const float* xb, int8_t* q) {
  __m256 v[4], amax = _mm256_setzero_ps();
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(xb + 8 * k);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));  // |x|: the sign bit cleared
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float d = _mm_cvtss_f32(m) / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
  const __m256 scale = _mm256_set1_ps(inverse), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  __m256i codes[4];
  for (int k = 0; k < 4; ++k) {  // |x · inverse| ≤ 127 up to rounding: the clamp keeps it there
    const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[k], scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    codes[k] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
  }
  // int32 → int8 in two packing steps; they interleave 4-value groups across the 128-bit halves,
  // which the final permutation puts back in order.
  const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(codes[0], codes[1]), _mm256_packs_epi32(codes[2], codes[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  return {d, sum_lanes(_mm256_add_ps(_mm256_add_ps(v[0], v[1]), _mm256_add_ps(v[2], v[3])))};
}
#else
Int8Activations::Block quantize_block(const float* xb, int8_t* q) {
  float amax = 0, sum = 0;
  for (int64_t j = 0; j < kBlock; ++j) {
    amax = std::max(amax, std::fabs(xb[j]));
    sum += xb[j];
  }
  const float d = amax / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
  for (int64_t j = 0; j < kBlock; ++j)  // |x · inverse| ≤ 127 up to rounding: the clamp keeps it there
    q[j] = static_cast<int8_t>(std::clamp(std::nearbyint(xb[j] * inverse), -127.0f, 127.0f));
  return {d, sum};
}
#endif

}  // namespace

// One target's rounding of x to int8 blocks (quantize_activations_int8 below picks the target).
void QuantizeActivations(const float* x, int64_t n, int64_t cols, Int8Activations& out) {
  out.n = n;
  out.cols = cols;
  out.q.resize(n * cols);
  out.blocks.resize(n * cols / kBlock);
  for (int64_t b = 0; b < n * cols / kBlock; ++b)
    out.blocks[b] = quantize_block(x + b * kBlock, out.q.data() + b * kBlock);
}

// One target's product (packed_matmul_int8_cpu below checks the arguments and picks the target).
void Int8Matmul(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const float* x, int64_t n,
                float* y) {
  thread_local Int8Activations a;  // reused from call to call: a decode step makes ~200 products
  QuantizeActivations(x, n, cols, a);
  // x in the order of the weights' slots (q8_0's and, block by block, q4_1's are x's own).
  if (in_pairs(format, a)) reorder_by_pairs(a, format);
  else if (format == PackedFormat::nf4) reorder_by_blocks(a, format);
#if !INFER_INT8_X86
  widen_x(a);
#endif
  switch (format) {
    case PackedFormat::q8_0: matmul<PackedFormat::q8_0>(w, rows, cols, a, y); break;
    case PackedFormat::q4_1: matmul<PackedFormat::q4_1>(w, rows, cols, a, y); break;
    default: matmul<PackedFormat::nf4>(w, rows, cols, a, y); break;
  }
}

}  // namespace infer::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer::quant {

HWY_EXPORT(QuantizeActivations);
HWY_EXPORT(Int8Matmul);

void quantize_activations_int8(const float* x, int64_t n, int64_t cols, Int8Activations& out) {
  if (cols % kBlock != 0)
    throw std::invalid_argument(fmt::format("quantize_activations_int8: {} columns, not a multiple of 32", cols));
  simd::init();
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)(x, n, cols, out);
}

const int8_t* nf4_levels_int8() {
  static const std::array<int8_t, 16> table = [] {
    std::array<int8_t, 16> t{};
    for (int j = 0; j < 16; ++j) t[j] = static_cast<int8_t>(std::lround(127.0f * kNf4Levels[j]));
    return t;
  }();
  return table.data();
}

bool has_int8_activation_kernel(PackedFormat format) {
  return format == PackedFormat::q8_0 || format == PackedFormat::q4_1 || format == PackedFormat::nf4;
}

bool int8_activations_supported(PackedFormat format, int64_t cols) {
  return has_int8_activation_kernel(format) && cols % (format == PackedFormat::nf4 ? 64 : kBlock) == 0;
}

void packed_matmul_int8_cpu(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const float* x,
                            int64_t n, float* y) {
  if (!int8_activations_supported(format, cols))
    throw std::invalid_argument(fmt::format("packed_matmul_int8_cpu: no int8-activation kernel for {} with {} columns "
                                            "(q8_0, q4_1: a multiple of 32; nf4: of 64)", format_flag(format), cols));
  if (w == nullptr || x == nullptr || y == nullptr) throw std::invalid_argument("packed_matmul_int8_cpu: null pointer");
  if (rows <= 0 || n < 0) throw std::invalid_argument(fmt::format("packed_matmul_int8_cpu: {} rows, n = {}", rows, n));
  if (n == 0) return;
  simd::init();
  HWY_DYNAMIC_DISPATCH(Int8Matmul)(format, w, rows, cols, x, n, y);
}

}  // namespace infer::quant
#endif  // HWY_ONCE
