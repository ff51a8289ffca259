#include "absmax.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gguf/ggml_types.hpp"  // fp16 conversions
#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// round(), ties away from zero, without a library call in the inner loop (|x| < 2^31; callers
// clamp to ±127 right after, and w / scale never exceeds 128 by more than fp16 rounding).
float round_half_away(float x) {
  const float a = std::fabs(x);
  float r = static_cast<float>(static_cast<int32_t>(a));  // truncation; a − r is exact
  if (a - r >= 0.5f) r += 1.0f;
  return std::copysign(r, x);
}

void store_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>(v >> 8);
}
uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

void check_shape(int64_t rows, int64_t cols, std::size_t size) {
  if (rows <= 0 || cols <= 0 || static_cast<std::size_t>(rows * cols) != size)
    throw std::invalid_argument(fmt::format("quantize: shape [{}, {}] does not match {} values", rows, cols, size));
}

}  // namespace

AbsmaxScheme::AbsmaxScheme(int bits, Granularity granularity, int64_t group)
    : bits_(bits), granularity_(granularity), group_(group) {
  if (bits != 8 && bits != 4) throw std::invalid_argument(fmt::format("AbsmaxScheme: {} bits (8 or 4)", bits));
  if (granularity == Granularity::per_group && group < 2)
    throw std::invalid_argument(fmt::format("AbsmaxScheme: group of {}", group));
}

std::string AbsmaxScheme::name() const {
  const std::string g = granularity_ == Granularity::per_tensor ? "per-tensor"
                        : granularity_ == Granularity::per_row  ? "per-row"
                                                                : fmt::format("g{}", group_);
  return fmt::format("INT{} {}", bits_, g);
}

int64_t AbsmaxScheme::group_size(int64_t rows, int64_t cols) const {
  switch (granularity_) {
    case Granularity::per_tensor: return rows * cols;
    case Granularity::per_row: return cols;
    case Granularity::per_group: return group_;
  }
  return rows * cols;
}

std::size_t AbsmaxScheme::packed_bytes(int64_t rows, int64_t cols) const {
  const int64_t n = rows * cols;
  const int64_t groups = ceil_div(n, group_size(rows, cols));
  const int64_t code_bytes = bits_ == 8 ? n : ceil_div(n, 2);
  return static_cast<std::size_t>(2 * groups + code_bytes);
}

double AbsmaxScheme::bits_per_weight(int64_t rows, int64_t cols) const {
  return 8.0 * static_cast<double>(packed_bytes(rows, cols)) / static_cast<double>(rows * cols);
}

// the-change: begin AbsmaxScheme::quantize
PackedMatrix AbsmaxScheme::quantize(std::span<const float> w, int64_t rows, int64_t cols) const {
  check_shape(rows, cols, w.size());
  const int64_t n = rows * cols, g = group_size(rows, cols), groups = ceil_div(n, g);
  PackedMatrix p{rows, cols, std::vector<uint8_t>(packed_bytes(rows, cols), 0)};
  uint8_t* scales = p.bytes.data();
  uint8_t* codes = scales + 2 * groups;
  const float top = static_cast<float>(qmax());

  // INT4 groups of odd size share a byte at their border: pack those serially.
  const bool parallel = bits_ == 8 || g % 2 == 0;
  parallel_for(groups, (parallel) ? balanced_grain(groups, 64) : groups, [&](int64_t first, int64_t last) {
    for (int64_t gi = first; gi < last; ++gi) {
      const int64_t begin = gi * g, end = std::min(n, begin + g);
      float amax = 0;
      for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(w[i]));
      // The scale is stored in fp16; quantize with the stored value so that ŵ = q · stored scale
      // is the best this storage can do. Rounding it down can push the largest weight just past
      // qmax, hence the clamp.
      const uint16_t scale_bits = gguf::fp32_to_fp16(amax / top);
      store_u16(scales + 2 * gi, scale_bits);
      const float scale = gguf::fp16_to_fp32(scale_bits);
      const float inv = scale > 0 ? 1.0f / scale : 0.0f;
      for (int64_t i = begin; i < end; ++i) {
        const int qi = static_cast<int>(std::clamp(round_half_away(w[i] * inv), -top, top));
        if (bits_ == 8) {
          codes[i] = static_cast<uint8_t>(static_cast<int8_t>(qi));
        } else {
          // Two weights per byte, the first in the low nibble.
          const auto nibble = static_cast<uint8_t>(qi + 8);
          if (i % 2 == 0)
            codes[i / 2] = static_cast<uint8_t>((codes[i / 2] & 0xF0) | nibble);
          else
            codes[i / 2] = static_cast<uint8_t>((codes[i / 2] & 0x0F) | (nibble << 4));
        }
      }
    }
  });
  return p;
}
// the-change: end AbsmaxScheme::quantize

void AbsmaxScheme::dequantize(const PackedMatrix& p, std::span<float> out) const {
  const int64_t n = p.numel(), g = group_size(p.rows, p.cols), groups = ceil_div(n, g);
  if (p.bytes.size() != packed_bytes(p.rows, p.cols) || std::ssize(out) != n)
    throw std::invalid_argument(fmt::format("{}: dequantize of a packed matrix of the wrong size", name()));
  const uint8_t* scales = p.bytes.data();
  const uint8_t* codes = scales + 2 * groups;

  parallel_for(groups, balanced_grain(groups, 64), [&](int64_t first, int64_t last) {
    for (int64_t gi = first; gi < last; ++gi) {
      const float scale = gguf::fp16_to_fp32(load_u16(scales + 2 * gi));
      const int64_t begin = gi * g, end = std::min(n, begin + g);
      for (int64_t i = begin; i < end; ++i) {
        int q;
        if (bits_ == 8)
          q = static_cast<int8_t>(codes[i]);
        else
          q = ((i % 2 == 0) ? (codes[i / 2] & 0x0F) : (codes[i / 2] >> 4)) - 8;
        out[i] = static_cast<float>(q) * scale;
      }
    }
  });
}

}  // namespace infer::quant
