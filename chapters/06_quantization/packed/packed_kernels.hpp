// Chapter 06, part 2, file 1: kernels that multiply straight from packed weights.
//
// Part 1 of the chapter measured what a scheme does to the numbers by dequantizing in place:
// the model still read 4 bytes per weight. Decode is bound by the bytes it moves, so the saving
// comes only when the matrix-vector product reads the packed bytes themselves and turns codes
// back into weights in registers, just before it multiplies:
//
//   y[i, r] = Σ_c  x[i, c] · ŵ(r, c)          ŵ(r, c) decoded from the packed bytes on the fly
//
// The bytes are exactly the PackedMatrix that the scheme's quantize() writes (quant_scheme.hpp),
// so a kernel is tested against that scheme's own dequantize():
//
//   int8_per_row   fp16 scale of every row, then one int8 code per weight        (absmax.hpp)
//   int4_g128      fp16 scale of every 128 consecutive weights of the row-major
//                  matrix (a group may span two rows), then codes q + 8, two per
//                  byte, low nibble first                                          (absmax.hpp)
//   nf4            fp16 absmax of every 64 consecutive weights, then level
//                  indices, two per byte, low nibble first                         (nf4.hpp)
//   q8_0, q4_1     llama.cpp's blocks of 32 along each row                         (ggml_blocks.hpp)
//
// One signature per device; the CUDA one is compiled only with the CUDA backend
// (cuda/packed_kernels.cu) and otherwise throws "built without CUDA"
// (cuda/packed_kernels_absent.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "quant_scheme.hpp"

namespace infer::quant {

enum class PackedFormat { int8_per_row, int4_g128, nf4, q8_0, q4_1 };
// Every format, in the order of the tables.
inline constexpr std::array<PackedFormat, 5> kPackedFormats = {PackedFormat::int8_per_row, PackedFormat::int4_g128,
                                                               PackedFormat::nf4, PackedFormat::q8_0, PackedFormat::q4_1};

// The scheme's name as the CLI spells it ("int8", "int4-g128", "nf4", "q8_0", "q4_1").
std::string format_flag(PackedFormat format);
std::optional<PackedFormat> parse_format_flag(const std::string& flag);
// The QuantScheme that writes this format.
std::unique_ptr<QuantScheme> scheme_for(PackedFormat format);

// What the kernel multiplies the weights with: x as it comes (fp32), or x rounded to int8 in
// blocks of 32 and integer dot products (int8_activations.hpp: q8_0, q4_1 and nf4, n < 32 rows of
// x; lossy, and measured as such).
enum class Activations { fp32, int8 };
inline const char* activations_name(Activations a) { return a == Activations::int8 ? "int8" : "fp32"; }

// y[n, rows] = x[n, cols] · Ŵᵀ, with Ŵ [rows, cols] held as `w`, packed in `format`.
// Host pointers. Multithreaded over output rows (cpu/packed_kernels.cpp): n < 32 decodes in
// registers, a larger n decodes a cache-sized panel of rows at a time for sgemm. Equals
// dequantize-then-multiply up to the order of the fp32 sums. With Activations::int8, n < 32 and
// a format that has the kernel, x is rounded to int8 first (int8_activations.hpp); otherwise the
// fp32 path runs. Throws std::invalid_argument for a bad shape (q8_0 and q4_1 need cols % 32 == 0)
// or a null pointer.
void packed_matmul_cpu(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols,
                       const float* x, int64_t n, float* y, Activations activations = Activations::fp32);
// out[i, cols] = row ids[i] of Ŵ: an embedding lookup from a packed (tied) embedding matrix.
// Bit for bit the rows dequantize() writes; an id outside [0, rows) throws std::invalid_argument.
void packed_gather_rows_cpu(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols,
                            const int32_t* ids, int64_t n, float* out);

// The same on the GPU: every pointer is device memory (ids too), work on the default stream.
void packed_matmul_cuda(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols,
                        const float* x, int64_t n, float* y);
void packed_gather_rows_cuda(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols,
                             const int32_t* ids, int64_t n, float* out);

}  // namespace infer::quant
