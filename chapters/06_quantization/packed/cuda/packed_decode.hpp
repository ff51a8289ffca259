// Chapter 06's CUDA kernels, part 1: the decode formulas, one per packed format, written once
// for both sides of the bus.
//
// Every function here is __host__ __device__ when nvcc compiles it and plain inline C++
// otherwise, so the same lines that the GPU kernels run (cuda/packed_kernels.cu) are checked on
// the CPU against each scheme's own dequantize() (tests/chapter_unit/test_packed_decode.cpp),
// on machines without a GPU. The layouts are those of packed_kernels.hpp:
//
//   format         bytes                                        ŵ(r, c), f = r·cols + c
//   int8_per_row   rows fp16 scales s, then rows·cols int8 q    q[f] · s[r]
//   int4_g128      ⌈n/128⌉ fp16 scales s, then nibbles          (nib(f) − 8) · s[f / 128]
//   nf4            ⌈n/64⌉ fp16 absmax a, then nibbles           a[f / 64] · level[nib(f)]
//   q8_0           per row, cols/32 blocks {fp16 d, 32 int8 q}  d · q[c % 32]
//   q4_1           per row, cols/32 blocks {fp16 d, fp16 m,     d · q + m, q = nibble c % 32 of
//                  16 bytes: weight j low nibble of byte j,      the block
//                  weight j + 16 high nibble of byte j}
//
// nib(f) is the low nibble of byte f / 2 for even f, the high one for odd f: the 4-bit codes of
// int4_g128 and nf4 run over the flat row-major matrix, so with an odd cols a row starts in the
// middle of a byte, and a group of 128 (or block of 64) may span two rows. fp16 values are
// little-endian and are read byte by byte, so no pointer needs any alignment.
//
// Each product is written in the order dequantize() writes it (q · s, a · level, d · q + m)
// and, on the GPU, with the rounding intrinsics that stop nvcc from fusing d · q + m into one
// FMA: a decoded weight is then bit for bit the weight dequantize() returns.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define INFER_HD __host__ __device__
#else
#define INFER_HD
#endif
// Loops over a fixed count (8 weights, kTile rows) unrolled on the GPU, so that the small arrays
// they index stay in registers.
#if defined(__CUDA_ARCH__)
#define INFER_UNROLL _Pragma("unroll")
#else
#define INFER_UNROLL
#endif

#include "packed_kernels.hpp"

namespace infer::quant::packed {

// ---- scalars --------------------------------------------------------------------------------

// An fp16 bit pattern to float, exactly (every fp16 value, subnormals included, is a float).
INFER_HD inline float half_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    // Zero or subnormal: mantissa · 2^−24, exact in float.
    const float v = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exponent == 31)
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf, NaN
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 → 127
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// The little-endian fp16 at p.
INFER_HD inline float load_half(const uint8_t* p) {
  return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// a · b and a · b + c, rounded once per operation on both sides (no fused multiply-add).
INFER_HD inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
INFER_HD inline float mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;  // the expression dequantize() evaluates
#endif
}

// The NF4 levels of nf4.hpp (kNf4Levels), as a switch so that device code needs no table in
// memory: the compiler turns it into a few selects.
INFER_HD inline float nf4_level(int q) {
  switch (q & 15) {
    case 0: return -1.0f;
    case 1: return -0.6961928009986877f;
    case 2: return -0.5250730514526367f;
    case 3: return -0.39491748809814453f;
    case 4: return -0.28444138169288635f;
    case 5: return -0.18477343022823334f;
    case 6: return -0.09105003625154495f;
    case 7: return 0.0f;
    case 8: return 0.07958029955625534f;
    case 9: return 0.16093020141124725f;
    case 10: return 0.24611230194568634f;
    case 11: return 0.33791524171829224f;
    case 12: return 0.44070982933044434f;
    case 13: return 0.5626170039176941f;
    case 14: return 0.7229568362236023f;
    default: return 1.0f;
  }
}

// Nibble f of a run of 4-bit codes: the low nibble of byte f / 2 for even f, else the high one.
INFER_HD inline int nibble(const uint8_t* codes, int64_t f) {
  const int byte = codes[f / 2];
  return (f % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
}

// ---- layout constants ---------------------------------------------------------------------------

inline constexpr int64_t kInt4Group = 128;  // AbsmaxScheme(4, per_group, 128)
inline constexpr int64_t kNf4Block = 64;    // Nf4Scheme(64)
inline constexpr int64_t kGgmlBlock = 32;   // Q8_0, Q4_1
inline constexpr int64_t kQ8_0Bytes = 34;   // fp16 d + 32 int8
inline constexpr int64_t kQ4_1Bytes = 20;   // fp16 d + fp16 m + 16 bytes of nibbles

INFER_HD inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- one weight -------------------------------------------------------------------------------

// ŵ(r, c) of a packed [rows, cols] matrix. The reference path: the row gather (the embedding) uses it for every
// weight, the tiled matrix product for every weight it stages in shared memory, and the
// matrix-vector product wherever a run of 8 weights is not aligned to its fast path.
template <PackedFormat F>
INFER_HD inline float decode_at(const uint8_t* w, int64_t rows, int64_t cols, int64_t r, int64_t c) {
  const int64_t f = r * cols + c;
  if constexpr (F == PackedFormat::int8_per_row) {
    const float scale = load_half(w + 2 * r);
    const int q = static_cast<int8_t>(w[2 * rows + f]);
    return mul(static_cast<float>(q), scale);
  } else if constexpr (F == PackedFormat::int4_g128) {
    const int64_t groups = ceil_div(rows * cols, kInt4Group);
    const float scale = load_half(w + 2 * (f / kInt4Group));
    return mul(static_cast<float>(nibble(w + 2 * groups, f) - 8), scale);
  } else if constexpr (F == PackedFormat::nf4) {
    const int64_t blocks = ceil_div(rows * cols, kNf4Block);
    const float absmax = load_half(w + 2 * (f / kNf4Block));
    return mul(absmax, nf4_level(nibble(w + 2 * blocks, f)));
  } else if constexpr (F == PackedFormat::q8_0) {
    const uint8_t* block = w + r * (cols / kGgmlBlock) * kQ8_0Bytes + (c / kGgmlBlock) * kQ8_0Bytes;
    const int q = static_cast<int8_t>(block[2 + c % kGgmlBlock]);
    return mul(load_half(block), static_cast<float>(q));
  } else {  // q4_1
    const uint8_t* block = w + r * (cols / kGgmlBlock) * kQ4_1Bytes + (c / kGgmlBlock) * kQ4_1Bytes;
    const int64_t j = c % kGgmlBlock;
    const int byte = block[4 + j % 16];
    const int q = j < 16 ? (byte & 0x0F) : (byte >> 4);
    return mul_add(load_half(block), static_cast<float>(q), load_half(block + 2));
  }
}

// ---- eight weights ------------------------------------------------------------------------------

// ŵ(r, c0 … c0 + 7) into v[0 … 7] (zeros past the end of the row); returns how many of the 8
// lie in the row. c0 is a multiple of 8. The fast paths read one scale and 8 (or 4 bytes of)
// codes; a run that straddles a scale group or starts mid-byte falls back to decode_at.
template <PackedFormat F>
INFER_HD inline int decode8(const uint8_t* w, int64_t rows, int64_t cols, int64_t r, int64_t c0, float v[8]) {
  const int64_t left = cols - c0;
  const int valid = left < 8 ? static_cast<int>(left) : 8;
  if (valid < 8) {
    INFER_UNROLL
    for (int j = 0; j < 8; ++j) v[j] = j < valid ? decode_at<F>(w, rows, cols, r, c0 + j) : 0.0f;
    return valid;
  }
  const int64_t f0 = r * cols + c0;
  if constexpr (F == PackedFormat::int8_per_row) {
    const float scale = load_half(w + 2 * r);
    const uint8_t* q = w + 2 * rows + f0;
    INFER_UNROLL
    for (int j = 0; j < 8; ++j) v[j] = mul(static_cast<float>(static_cast<int8_t>(q[j])), scale);
  } else if constexpr (F == PackedFormat::int4_g128 || F == PackedFormat::nf4) {
    constexpr int64_t group = F == PackedFormat::int4_g128 ? kInt4Group : kNf4Block;
    // Fast when the 8 codes are 4 whole bytes of one group: f0 even and no group border inside.
    if (f0 % 2 != 0 || f0 / group != (f0 + 7) / group) {
      INFER_UNROLL
      for (int j = 0; j < 8; ++j) v[j] = decode_at<F>(w, rows, cols, r, c0 + j);
      return 8;
    }
    const int64_t groups = ceil_div(rows * cols, group);
    const float scale = load_half(w + 2 * (f0 / group));
    const uint8_t* codes = w + 2 * groups + f0 / 2;
    INFER_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int byte = codes[j];
      if constexpr (F == PackedFormat::int4_g128) {
        v[2 * j] = mul(static_cast<float>((byte & 0x0F) - 8), scale);
        v[2 * j + 1] = mul(static_cast<float>((byte >> 4) - 8), scale);
      } else {
        v[2 * j] = mul(scale, nf4_level(byte & 0x0F));
        v[2 * j + 1] = mul(scale, nf4_level(byte >> 4));
      }
    }
  } else if constexpr (F == PackedFormat::q8_0) {
    // cols is a multiple of 32 and c0 of 8: the 8 weights lie in one block.
    const uint8_t* block = w + r * (cols / kGgmlBlock) * kQ8_0Bytes + (c0 / kGgmlBlock) * kQ8_0Bytes;
    const float d = load_half(block);
    const uint8_t* q = block + 2 + c0 % kGgmlBlock;
    INFER_UNROLL
    for (int j = 0; j < 8; ++j) v[j] = mul(d, static_cast<float>(static_cast<int8_t>(q[j])));
  } else {  // q4_1: weights j0 … j0 + 7 of a block are the low (j0 < 16) or high nibbles of 8 bytes
    const uint8_t* block = w + r * (cols / kGgmlBlock) * kQ4_1Bytes + (c0 / kGgmlBlock) * kQ4_1Bytes;
    const float d = load_half(block), m = load_half(block + 2);
    const int64_t j0 = c0 % kGgmlBlock;
    const uint8_t* bytes = block + 4 + j0 % 16;
    const int shift = j0 < 16 ? 0 : 4;
    INFER_UNROLL
    for (int j = 0; j < 8; ++j) v[j] = mul_add(d, static_cast<float>((bytes[j] >> shift) & 0x0F), m);
  }
  return 8;
}

// ---- one lane's share of a matrix-vector product ----------------------------------------------

// The part of y[t, r] = Σ_c x[t, c] · ŵ(r, c), t < tn ≤ kTile, that lane `lane` of `lanes`
// computes: the runs of 8 columns k·8 with k = lane, lane + lanes, … (so the lanes of a warp read
// neighbouring codes and neighbouring x values together). acc[t] += the lane's partial sums;
// adding the partial sums of all the lanes gives y. The kernel's warp runs it with lanes = 32
// and adds with shuffles; the CPU test runs it lane after lane.
template <PackedFormat F, int kTile>
INFER_HD inline void lane_partial(const uint8_t* w, int64_t rows, int64_t cols, int64_t r, const float* x,
                                  int tn, int lane, int lanes, float acc[kTile]) {
  const int64_t runs = ceil_div(cols, 8);
  for (int64_t k = lane; k < runs; k += lanes) {
    const int64_t c0 = 8 * k;
    float v[8];
    const int valid = decode8<F>(w, rows, cols, r, c0, v);
    INFER_UNROLL
    for (int t = 0; t < kTile; ++t) {
      if (t < tn) {
        const float* xr = x + t * cols + c0;
        float s = 0.0f;
        INFER_UNROLL
        for (int j = 0; j < 8; ++j)
          if (j < valid) s += v[j] * xr[j];  // never reads x past the end of its row
        acc[t] += s;
      }
    }
  }
}

}  // namespace infer::quant::packed
