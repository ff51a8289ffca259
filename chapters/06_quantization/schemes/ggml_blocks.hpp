// Chapter 06, part 1b, another scheme: llama.cpp's own block formats, Q8_0 (absmax.hpp in blocks of
// 32) and Q4_1 (a scale and a minimum per block), for comparison with what the model file ships
// (its projections are Q4_1, its embedding table Q8_0).
//
//   Q8_0  blocks of 32 weights: fp16 d, 32 int8 q.        d = max|w| / 127,  ŵ = d·q
//         34 bytes per 32 weights = 8.5 bits per weight
//   Q4_1  blocks of 32 weights: fp16 d, fp16 m, 16 bytes of nibbles (weight j in the low
//         nibble of byte j, weight j+16 in its high nibble).
//         m = min(w), d = (max(w) − min(w)) / 15,  q = round((w − m) / d) in 0 … 15,  ŵ = d·q + m
//         20 bytes per 32 weights = 5 bits per weight
//
// Q4_1 is asymmetric: its 16 levels span [min, max] of the block rather than [−max|w|, max|w|],
// which helps a block whose weights lean to one side. The quantizers follow ggml's reference
// implementations (quantize_row_q8_0_ref, quantize_row_q4_1_ref in ggml-quants.c) operation
// for operation, so that the blocks they write are the blocks llama.cpp would write; the test
// decodes them with lib/gguf's dequantize_row, the loader's decoder.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "gguf/ggml_types.hpp"
#include "quant_scheme.hpp"

namespace infer::quant {

// Writes n/32 blocks of `type` (Q8_0 or Q4_1) for x[0 … n) into dst (n a multiple of 32;
// dst holds n/32 · block bytes).
void quantize_row_ggml(gguf::GgmlType type, const float* x, uint8_t* dst, int64_t n);

class GgmlBlockScheme : public QuantScheme {
 public:
  explicit GgmlBlockScheme(gguf::GgmlType type);  // Q8_0 or Q4_1

  std::string name() const override;
  double bits_per_weight(int64_t rows, int64_t cols) const override;
  std::size_t packed_bytes(int64_t rows, int64_t cols) const override;
  // The blocks run along each row, as in a GGUF tensor: cols must be a multiple of 32.
  PackedMatrix quantize(std::span<const float> w, int64_t rows, int64_t cols) const override;
  // Our own decoder (the formulas above), independent of lib/gguf's.
  void dequantize(const PackedMatrix& q, std::span<float> out) const override;

  gguf::GgmlType type() const { return type_; }

 private:
  gguf::GgmlType type_;
};

}  // namespace infer::quant
