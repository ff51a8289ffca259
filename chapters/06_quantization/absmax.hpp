// Chapter 06, part 1, file 2: symmetric absmax quantization, the "just round the numbers" scheme.
//
//   scale = max |w| / qmax            over the weights that share the scale
//   q     = round(w / scale)          an integer in −qmax … qmax   (qmax = 127 for INT8, 7 for INT4)
//   ŵ     = q · scale
//
// The largest weight lands exactly on ±qmax and every other weight on the nearest of the
// 2·qmax + 1 evenly spaced levels. One huge weight therefore stretches the step for everything
// that shares its scale, which is the whole story of granularity: the scale can be shared by
// the whole tensor, by one output row, or by a group of 128 consecutive weights.
//
// Storage: one fp16 scale per group, then the codes — one byte each for INT8, two per byte for
// INT4 (first weight in the low nibble, stored as q + 8 in 0 … 15; code 0 is never used, so
// INT4 has 15 levels, symmetric around an exact zero). Groups run over the row-major matrix:
// per-row groups are the rows, g128 groups are 128 consecutive weights (a group may span two
// rows when cols is not a multiple of 128 — 576 = 4.5 × 128 in the default model; that changes
// nothing about the error and keeps the cost at exactly 4 + 16/128 = 4.125 bits per weight).
#pragma once

#include <cstdint>
#include <string>

#include "quant_scheme.hpp"

namespace infer::quant {

enum class Granularity { per_tensor, per_row, per_group };

class AbsmaxScheme : public QuantScheme {
 public:
  // bits: 8 or 4. group: the group size for per_group (ignored otherwise).
  AbsmaxScheme(int bits, Granularity granularity, int64_t group = 128);

  std::string name() const override;
  double bits_per_weight(int64_t rows, int64_t cols) const override;
  std::size_t packed_bytes(int64_t rows, int64_t cols) const override;
  PackedMatrix quantize(std::span<const float> w, int64_t rows, int64_t cols) const override;
  void dequantize(const PackedMatrix& q, std::span<float> out) const override;

  int qmax() const { return bits_ == 8 ? 127 : 7; }
  // How many consecutive weights share one scale in a [rows, cols] matrix.
  int64_t group_size(int64_t rows, int64_t cols) const;

 private:
  int bits_;
  Granularity granularity_;
  int64_t group_;
};

}  // namespace infer::quant
