#include "float_formats.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gguf/ggml_types.hpp"  // fp16 conversions (round to nearest even)
#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

// The 127 non-negative finite E4M3 values, by code (0x00 … 0x7E), ascending: the code order is
// the value order, so the nearest value can be found by binary search.
//   exponent field e = 0:  m/8 · 2^−6        (subnormal: 0, 2^−9 … 7·2^−9)
//   exponent field e > 0:  (1 + m/8) · 2^(e−7)
std::array<float, 127> e4m3_values() {
  std::array<float, 127> v{};
  for (int code = 0; code < 127; ++code) {
    const int e = code >> 3, m = code & 7;
    v[code] = e == 0 ? std::ldexp(m / 8.0f, -6)            // subnormal: m/8 · 2^-6
                     : std::ldexp(1.0f + m / 8.0f, e - 7);  // normal: (1 + m/8) · 2^(e-7)
  }
  return v;
}
const std::array<float, 127> kE4m3 = e4m3_values();

}  // namespace

uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);  // stays a (quiet) NaN
  // Add half of the dropped part's unit, plus one when the kept part is odd: ties go to even.
  // A carry into the exponent is the correct rounding up (to infinity past bf16's largest).
  const uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float bf16_bits_to_fp32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint8_t fp32_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= kE4m3.back()) return static_cast<uint8_t>(sign | 0x7E);  // saturate at 448
  // The first value ≥ a, and the one below it: whichever is nearer; a tie goes to the even code
  // (an even mantissa), as round-to-nearest-even does.
  const auto hi = static_cast<int>(std::lower_bound(kE4m3.begin(), kE4m3.end(), a) - kE4m3.begin());
  if (hi == 0) return sign;  // a == 0
  const int lo = hi - 1;
  const float below = a - kE4m3[lo], above = kE4m3[hi] - a;
  const int code = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<uint8_t>(sign | code);
}

float e4m3_to_fp32(uint8_t bits) {
  const int code = bits & 0x7F;
  if (code == 0x7F) return NAN;
  const float v = kE4m3[code];
  return (bits & 0x80) ? -v : v;
}

FloatScheme::FloatScheme(FloatFormat format) : format_(format) {}

std::string FloatScheme::name() const {
  switch (format_) {
    case FloatFormat::fp16: return "fp16";
    case FloatFormat::bf16: return "bf16";
    case FloatFormat::fp8_e4m3: return "fp8 e4m3";
  }
  return "?";
}

std::size_t FloatScheme::packed_bytes(int64_t rows, int64_t cols) const {
  return static_cast<std::size_t>(rows * cols * bytes_per_weight());
}

double FloatScheme::bits_per_weight(int64_t, int64_t) const { return 8.0 * bytes_per_weight(); }

// Layout: the weights' bits in row-major order, little-endian for the 2-byte formats.
PackedMatrix FloatScheme::quantize(std::span<const float> w, int64_t rows, int64_t cols) const {
  if (rows <= 0 || cols <= 0 || rows * cols != std::ssize(w))
    throw std::invalid_argument(fmt::format("{}: shape [{}, {}] does not match {} values", name(), rows, cols, w.size()));
  PackedMatrix p{rows, cols, std::vector<uint8_t>(packed_bytes(rows, cols))};
  const auto n = std::ssize(w);
  uint8_t* out = p.bytes.data();
  parallel_for(n, balanced_grain(n, 1 << 14), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const float x = w[i];
      if (format_ == FloatFormat::fp8_e4m3) {
        out[i] = fp32_to_e4m3(x);
      } else {
        const uint16_t b = format_ == FloatFormat::fp16 ? gguf::fp32_to_fp16(x) : fp32_to_bf16(x);
        out[2 * i] = static_cast<uint8_t>(b & 0xFF);
        out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
      }
    }
  });
  return p;
}

void FloatScheme::dequantize(const PackedMatrix& p, std::span<float> out) const {
  const int64_t n = p.numel();
  if (p.bytes.size() != packed_bytes(p.rows, p.cols) || std::ssize(out) != n)
    throw std::invalid_argument(fmt::format("{}: dequantize of a packed matrix of the wrong size", name()));
  const uint8_t* in = p.bytes.data();
  parallel_for(n, balanced_grain(n, 1 << 14), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float v = 0;
      if (format_ == FloatFormat::fp8_e4m3) {
        v = e4m3_to_fp32(in[i]);
      } else {
        const auto b = static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8));
        v = format_ == FloatFormat::fp16 ? gguf::fp16_to_fp32(b) : bf16_bits_to_fp32(b);
      }
      out[i] = v;
    }
  });
}

}  // namespace infer::quant
