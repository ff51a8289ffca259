// Chapter 06, part 1b, another scheme: NF4, the 4-bit "normal float" of QLoRA (Dettmers et al.,
// 2023) — absmax.hpp's blocks with 16 other levels.
//
// Absmax INT4 spaces its 15 levels evenly, but trained weights are not spread evenly: within a
// block they are roughly normal, crowded near zero with thin tails. NF4 keeps 16 levels in
// [−1, 1] placed at quantiles of a normal distribution — dense near zero where most weights are,
// sparse in the tails — with an exact 0 and the extremes ±1:
//
//   ŵ = absmax(block) · level[q]          q = the index of the level nearest to w / absmax
//
// Blocks of 64 consecutive weights, one fp16 absmax per block: 4 + 16/64 = 4.25 bits per weight.
// (QLoRA also quantizes the block constants themselves, "double quantization", to reach about
// 4.127 bits; we keep the plain fp16 constant.)
#pragma once

#include <array>
#include <string>

#include "quant_scheme.hpp"

namespace infer::quant {

// The 16 NF4 levels as published with QLoRA: Dettmers, Pagnoni, Holtzman, Zettlemoyer, "QLoRA:
// Efficient Finetuning of Quantized LLMs" (arXiv:2305.14314, appendix E), the same values as
// the NF4 table of the bitsandbytes library. Built from the normal quantile function Φ⁻¹: with
// δ = ½(1/32 + 1/30) the 8 positive levels are Φ⁻¹ at 8 evenly spaced probabilities from ½ to
// 1 − δ (the ½ itself dropped), the 7 negative ones −Φ⁻¹ at 7 evenly spaced probabilities from
// ½ to 1 − δ, then 0, all divided by the largest, so that ±1 are levels. The unit test
// rebuilds them from that recipe.
inline constexpr std::array<float, 16> kNf4Levels = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

// Index of the level nearest to x (x in [−1, 1]; ties go to the lower level).
int nf4_nearest(float x);

class Nf4Scheme : public QuantScheme {
 public:
  explicit Nf4Scheme(int64_t block = 64);

  std::string name() const override;
  double bits_per_weight(int64_t rows, int64_t cols) const override;
  std::size_t packed_bytes(int64_t rows, int64_t cols) const override;
  PackedMatrix quantize(std::span<const float> w, int64_t rows, int64_t cols) const override;
  void dequantize(const PackedMatrix& q, std::span<float> out) const override;

 private:
  int64_t block_;
};

}  // namespace infer::quant
