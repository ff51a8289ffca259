// Chapter 06, part 1, file 1: what a weight quantization scheme is.
//
// A scheme turns a [rows, cols] matrix of fp32 weights into packed storage — small integer
// codes plus the few floating-point numbers (scales, minima) needed to turn codes back into
// weights — and back again. The round trip W → codes → Ŵ loses information; how much, and where
// that loss hurts, is the lesson of the chapter.
//
// Every scheme here is "dequantize in place" material: quantize_model.hpp replaces each weight
// matrix by Ŵ in fp32, so the forward pass is unchanged and only the numbers differ. (A real
// deployment would keep the packed bytes and multiply from them; that saves memory and
// bandwidth, but it does not change which numbers the model computes with: part 2, packed/.)
//
// Bits per weight is exact, not nominal: it is 8 × packed bytes / weights, scales included.
// For example INT4 with a 16-bit scale per group of 128 stores 4 + 16/128 = 4.125 bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace infer::quant {

// The packed form of one matrix: exactly the bytes a file or a kernel would hold.
struct PackedMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> bytes;

  int64_t numel() const { return rows * cols; }
  // 8 × bytes / weights: what this matrix really costs per weight, scales included.
  double bits_per_weight() const {
    return numel() > 0 ? 8.0 * static_cast<double>(bytes.size()) / static_cast<double>(numel()) : 0.0;
  }
};

class QuantScheme {
 public:
  virtual ~QuantScheme() = default;

  virtual std::string name() const = 0;  // e.g. "INT4 g128"
  // Bits per weight of a matrix whose size is a multiple of the scheme's block (the model's
  // matrices are): e.g. 4.125 for INT4 g128. Per-tensor and per-row schemes add one 16-bit scale
  // per tensor or row; their value here depends on the shape.
  virtual double bits_per_weight(int64_t rows, int64_t cols) const = 0;
  // Bytes of the packed form of a [rows, cols] matrix (what quantize() returns).
  virtual std::size_t packed_bytes(int64_t rows, int64_t cols) const = 0;

  // w: rows·cols values, row-major. Throws std::invalid_argument for a shape the scheme cannot
  // pack (e.g. a size that is not a multiple of the llama.cpp block of 32).
  virtual PackedMatrix quantize(std::span<const float> w, int64_t rows, int64_t cols) const = 0;
  // out: rows·cols values, row-major.
  virtual void dequantize(const PackedMatrix& q, std::span<float> out) const = 0;
};

// quantize then dequantize: the Ŵ the model will compute with.
std::vector<float> round_trip(const QuantScheme& scheme, std::span<const float> w, int64_t rows, int64_t cols);

// ‖W − Ŵ‖ / ‖W‖ (Frobenius norms, accumulated in double). 0 for an all-zero W equal to Ŵ.
double relative_error(std::span<const float> w, std::span<const float> w_hat);

// The schemes of the quality table, in its order (fp32 is not a scheme: it is the reference):
// fp16, bf16, fp8 e4m3, INT8 per-tensor, INT8 per-row, INT4 per-tensor, INT4 per-row, INT4 g128,
// INT4 g128 asym, NF4 (blocks of 64), NF4 b128, Q8_0, Q4_1.
std::vector<std::unique_ptr<QuantScheme>> table_schemes();

}  // namespace infer::quant
