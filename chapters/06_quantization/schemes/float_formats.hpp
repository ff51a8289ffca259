// Chapter 06, part 1b, another scheme: narrower floating-point formats — fp16, bf16, fp8 (E4M3) —
// by rounding, with no scale at all.
//
// The integer schemes store codes and a scale per group; a float format needs no scale at all:
// each weight is rounded on its own to the nearest number the format can hold (round to nearest,
// ties to even, as hardware converts), and read back as fp32 for the multiplication. What differs
// between the formats is where their bits go:
//
//   format     sign  exponent  mantissa   largest    step near 1 (relative precision)   smallest > 0
//   fp16         1      5        10       65 504     2^−10 ≈ 0.1%                       2^−24 (subnormal)
//   bf16         1      8         7       ≈ 3.4e38   2^−7  ≈ 0.8%                       fp32's range
//   fp8 E4M3     1      4         3       448        2^−3  = 12.5%                      2^−9 (subnormal)
//
// fp16 and bf16 trade precision for range; for weights (all well inside ±65 504) fp16's extra
// mantissa bits are the better deal. E4M3 is the OCP 8-bit format (Micikevicius et al., "FP8
// Formats for Deep Learning", arXiv:2209.05433): no infinities, one NaN pattern per sign
// (S.1111.111), so the largest finite value is 1.75 · 2^8 = 448; values beyond it saturate to
// ±448 here. Weights are not rescaled first: a deployment usually multiplies by a per-tensor
// scale (amax / 448) so that small weights leave the subnormal range; plain rounding is the
// format itself, the scale would be one more scheme.
//
// Storage: the raw bits, 2 bytes per weight (fp16, bf16) or 1 (fp8): 16 or 8 bits per weight,
// nothing else.
#pragma once

#include <cstdint>
#include <string>

#include "quant_scheme.hpp"

namespace infer::quant {

enum class FloatFormat { fp16, bf16, fp8_e4m3 };

// Round to nearest even into the format, and back. fp16's conversions are lib/gguf's.
uint16_t fp32_to_bf16(float f);
float bf16_bits_to_fp32(uint16_t bits);
uint8_t fp32_to_e4m3(float f);  // NaN → 0x7F; beyond ±448 → ±448 (saturating)
float e4m3_to_fp32(uint8_t bits);

class FloatScheme : public QuantScheme {
 public:
  explicit FloatScheme(FloatFormat format);

  std::string name() const override;  // "fp16", "bf16", "fp8 e4m3"
  double bits_per_weight(int64_t rows, int64_t cols) const override;
  std::size_t packed_bytes(int64_t rows, int64_t cols) const override;
  PackedMatrix quantize(std::span<const float> w, int64_t rows, int64_t cols) const override;
  void dequantize(const PackedMatrix& q, std::span<float> out) const override;

 private:
  int bytes_per_weight() const { return format_ == FloatFormat::fp8_e4m3 ? 1 : 2; }
  FloatFormat format_;
};

}  // namespace infer::quant
