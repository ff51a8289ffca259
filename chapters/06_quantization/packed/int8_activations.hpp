// Chapter 06, part 2, file 4: 8-bit activations too — integer dot products, as llama.cpp does.
//
// The fp32 path of packed_kernels.hpp turns every code back into an fp32 weight before it
// multiplies. For a 4-bit weight that is a mask or shift, a conversion and a multiply-add per
// weight, 8 weights per instruction: decode runs out of arithmetic before it runs out of memory
// bandwidth. llama.cpp rounds the activation row x to 8 bits as well, once per product, in
// blocks of 32 columns like the weights:
//
//   x[c] ≈ dx · qx[c]        dx = max |x| over the block / 127,  qx = round(x / dx) in −127 … 127
//
// and a block of the product becomes one integer dot product and one fp32 scale:
//
//   q8_0   Σ w·x ≈ dw·dx · Σ qw·qx
//   q4_1   Σ (dw·qw + mw)·x ≈ dw·dx · Σ qw·qx + mw · Σ x       (the block's Σ x kept in fp32)
//   nf4    Σ a·L[qw]·x ≈ a·(1/127)·dx · Σ T[qw]·qx               T = round(127·L): the 16 NF4 levels
//                                                                as int8, looked up 32 at a time
//                                                                by one byte shuffle (vpshufb)
//
// 32 byte products are summed by vpmaddubsw + vpmaddwd (AVX2) or one vpdpbusd (AVX-512 VNNI or
// AVX-VNNI): 4 instructions per 32 weights instead of about 16. CPUs with 128-bit vectors only
// (SSE4, NEON) widen codes and x to int16 and sum 8 products per instruction (pmaddwd, smlal).
// The sums are exact integers (no pair of products can reach the 16-bit limit), so every
// instruction set gives the same integer sums.
//
// This is lossy: it changes the numbers, not only their cost. Each x is off by at most dx/2, so a
// product is off by at most Σ_c |ŵ[c] − m[c]| · dx[c]/2 beyond the weights' own rounding (m: the
// q4_1 block's offset, whose term uses the exact Σ x; 0 for the others), plus, for nf4, the
// rounding of the levels to T: |ŵ − ŵ_T| ≤ a/254 per weight. The speed table times it beside the
// fp32 path and its quality table measures what it costs in perplexity and greedy agreement.
//
// Used for small n (decode, batched decode, speculative verification: n < 32 rows of x), where
// the kernel streams the weights; a prefill (n ≥ 32) is arithmetic-bound, and the fp32 panels
// through sgemm are faster there (packed_kernels.cpp), so it keeps fp32 activations.
#pragma once

#include <cstdint>
#include <vector>

#include "packed_kernels.hpp"

namespace infer::quant {

// x [n, cols] rounded to int8 in blocks of 32 columns (cols a multiple of 32).
struct Int8Activations {
  struct Block {
    float scale;  // dx = max |x| / 127 of the block (0 for a zero block)
    float sum;    // Σ x over the block, in fp32 (q4_1's offset term); next to dx, so one load reads both
  };
  int64_t n = 0, cols = 0;
  std::vector<int8_t> q;       // [n, cols]: round(x / dx), in −127 … 127
  std::vector<Block> blocks;   // [n, cols / 32]
  std::vector<int16_t> q16;    // [n, cols]: q as int16, for the kernels of 128-bit targets (SSE4, NEON)
};
void quantize_activations_int8(const float* x, int64_t n, int64_t cols, Int8Activations& out);

// The NF4 levels as int8: round(127 · level), −127 … 127.
const int8_t* nf4_levels_int8();

// Which formats have an int8-activation kernel (q8_0, q4_1, nf4), and for what shapes (nf4: cols
// a multiple of 64, so that each row starts on a scale block; the others: of 32).
bool has_int8_activation_kernel(PackedFormat format);
bool int8_activations_supported(PackedFormat format, int64_t cols);

// y[n, rows] = x[n, cols] · Ŵᵀ with x rounded by quantize_activations_int8 and integer dot products
// (threads over the rows of Ŵ). Throws std::invalid_argument for an unsupported format or shape.
void packed_matmul_int8_cpu(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const float* x,
                            int64_t n, float* y);

}  // namespace infer::quant
