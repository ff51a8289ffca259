// Chapter 06, part 1b, another scheme: asymmetric INT4 — absmax.hpp's groups, with a scale and an
// integer zero point per group.
//
// Symmetric absmax centres its 15 levels on 0 and sizes them by max |w|, so a group whose
// weights run from −0.2 to +0.9 wastes most of its negative levels. The asymmetric scheme maps
// the group's own range [lo, hi] onto all 16 codes 0 … 15 and remembers which code means zero:
//
//   lo = min(0, min w), hi = max(0, max w)    (the range always contains 0, so 0 stays exact)
//   scale = (hi − lo) / 15                    stored in fp16; the codes are computed with the stored value
//   zero  = round(−lo / scale)                an integer in 0 … 15: the code that decodes to 0
//   q     = clamp(round(w / scale) + zero, 0, 15)
//   ŵ     = (q − zero) · scale
//
// This is the "zero point" of integer quantization as in GPTQ and AWQ's 4-bit formats and of
// llama.cpp's Q4_1 (which stores the minimum as a float instead of an integer zero point). It
// gains one level over symmetric INT4 and fits lopsided groups; for a group whose weights are
// symmetric about 0 the two are nearly the same.
//
// Storage per group of g weights: an fp16 scale, one byte for the zero point, g/2 bytes of
// nibbles (first weight in the low nibble): 4 + 24/g bits per weight, 4.1875 at g = 128 (a zero
// point packed into a nibble, as some formats do, would make it 4.156).
#pragma once

#include <cstdint>
#include <string>

#include "quant_scheme.hpp"

namespace infer::quant {

class AsymmetricInt4Scheme : public QuantScheme {
 public:
  explicit AsymmetricInt4Scheme(int64_t group = 128);  // group: even, ≥ 2

  std::string name() const override;  // "INT4 g128 asym"
  double bits_per_weight(int64_t rows, int64_t cols) const override;
  std::size_t packed_bytes(int64_t rows, int64_t cols) const override;
  PackedMatrix quantize(std::span<const float> w, int64_t rows, int64_t cols) const override;
  void dequantize(const PackedMatrix& q, std::span<float> out) const override;

 private:
  int64_t group_;
};

}  // namespace infer::quant
