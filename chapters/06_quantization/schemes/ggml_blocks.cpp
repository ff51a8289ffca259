#include "ggml_blocks.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

constexpr int64_t kBlock = 32;

void store_f16(uint8_t* p, float v) {
  const uint16_t h = gguf::fp32_to_fp16(v);
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}
float load_f16(const uint8_t* p) { return gguf::fp16_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

void check_type(gguf::GgmlType type) {
  if (type != gguf::GgmlType::Q8_0 && type != gguf::GgmlType::Q4_1)
    throw std::invalid_argument("ggml block quantizer: only Q8_0 and Q4_1 are implemented");
}

// One Q8_0 block (34 bytes), as quantize_row_q8_0_ref: note that q is rounded with the fp32 d,
// not the fp16 d that is stored.
void quantize_q8_0_block(const float* x, uint8_t* y) {
  float amax = 0.0f;
  for (int64_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(y, d);
  for (int64_t j = 0; j < kBlock; ++j) y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

// One Q4_1 block (20 bytes), as quantize_row_q4_1_ref: (int8_t)(x + 0.5f) truncates toward
// zero, which for x ≥ 0 is rounding half up; the result is capped at 15.
void quantize_q4_1_block(const float* x, uint8_t* y) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int64_t j = 0; j < kBlock; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 15.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(y, d);
  store_f16(y + 2, min);
  for (int64_t j = 0; j < kBlock / 2; ++j) {
    const float x0 = (x[j] - min) * id;
    const float x1 = (x[j + kBlock / 2] - min) * id;
    const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 0.5f)));
    const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 0.5f)));
    y[4 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

}  // namespace

void quantize_row_ggml(gguf::GgmlType type, const float* x, uint8_t* dst, int64_t n) {
  check_type(type);
  if (n % kBlock != 0) throw std::invalid_argument(fmt::format("ggml block quantizer: {} weights, not a multiple of 32", n));
  const int64_t bytes = gguf::traits(type).block_bytes;
  for (int64_t b = 0; b < n / kBlock; ++b) {
    if (type == gguf::GgmlType::Q8_0)
      quantize_q8_0_block(x + b * kBlock, dst + b * bytes);
    else
      quantize_q4_1_block(x + b * kBlock, dst + b * bytes);
  }
}

GgmlBlockScheme::GgmlBlockScheme(gguf::GgmlType type) : type_(type) { check_type(type); }

std::string GgmlBlockScheme::name() const { return std::string(gguf::traits(type_).name); }

std::size_t GgmlBlockScheme::packed_bytes(int64_t rows, int64_t cols) const {
  return static_cast<std::size_t>(rows * (cols / kBlock)) * gguf::traits(type_).block_bytes;
}

double GgmlBlockScheme::bits_per_weight(int64_t rows, int64_t cols) const {
  return 8.0 * static_cast<double>(packed_bytes(rows, cols)) / static_cast<double>(rows * cols);
}

PackedMatrix GgmlBlockScheme::quantize(std::span<const float> w, int64_t rows, int64_t cols) const {
  if (rows <= 0 || cols <= 0 || rows * cols != std::ssize(w))
    throw std::invalid_argument(fmt::format("{}: shape [{}, {}] does not match {} values", name(), rows, cols, w.size()));
  if (cols % kBlock != 0)
    throw std::invalid_argument(fmt::format("{}: rows of {} weights, not a multiple of the block of 32", name(), cols));
  PackedMatrix p{rows, cols, std::vector<uint8_t>(packed_bytes(rows, cols))};
  const std::size_t row_bytes = p.bytes.size() / static_cast<std::size_t>(rows);
  parallel_for(rows, balanced_grain(rows, 4), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r)
      quantize_row_ggml(type_, w.data() + r * cols, p.bytes.data() + static_cast<std::size_t>(r) * row_bytes, cols);
  });
  return p;
}

void GgmlBlockScheme::dequantize(const PackedMatrix& p, std::span<float> out) const {
  if (p.bytes.size() != packed_bytes(p.rows, p.cols) || std::ssize(out) != p.numel())
    throw std::invalid_argument(fmt::format("{}: dequantize of a packed matrix of the wrong size", name()));
  const int64_t blocks = p.numel() / kBlock;
  const int64_t bytes = gguf::traits(type_).block_bytes;
  parallel_for(blocks, balanced_grain(blocks, 64), [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const uint8_t* y = p.bytes.data() + b * bytes;
      float* o = out.data() + b * kBlock;
      const float d = load_f16(y);
      if (type_ == gguf::GgmlType::Q8_0) {
        for (int64_t j = 0; j < kBlock; ++j) o[j] = d * static_cast<float>(static_cast<int8_t>(y[2 + j]));
      } else {
        const float m = load_f16(y + 2);
        for (int64_t j = 0; j < kBlock / 2; ++j) {
          o[j] = d * static_cast<float>(y[4 + j] & 0x0F) + m;
          o[j + kBlock / 2] = d * static_cast<float>(y[4 + j] >> 4) + m;
        }
      }
    }
  });
}

}  // namespace infer::quant
