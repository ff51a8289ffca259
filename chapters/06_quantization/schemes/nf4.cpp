#include "nf4.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gguf/ggml_types.hpp"  // fp16 conversions
#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

// The 15 midpoints between neighbouring levels: x rounds to level i when it lies between
// midpoint i−1 and midpoint i.
constexpr std::array<float, 15> midpoints() {
  std::array<float, 15> m{};
  for (std::size_t i = 0; i < 15; ++i) m[i] = 0.5f * (kNf4Levels[i] + kNf4Levels[i + 1]);
  return m;
}
constexpr std::array<float, 15> kMidpoints = midpoints();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// the-change: begin nf4_nearest
int nf4_nearest(float x) {
  // The number of midpoints below x is the index of the nearest level.
  return static_cast<int>(std::lower_bound(kMidpoints.begin(), kMidpoints.end(), x) - kMidpoints.begin());
}
// the-change: end nf4_nearest

Nf4Scheme::Nf4Scheme(int64_t block) : block_(block) {
  if (block < 2 || block % 2 != 0) throw std::invalid_argument(fmt::format("Nf4Scheme: block of {} (even, ≥ 2)", block));
}

std::string Nf4Scheme::name() const { return block_ == 64 ? "NF4" : fmt::format("NF4 b{}", block_); }

std::size_t Nf4Scheme::packed_bytes(int64_t rows, int64_t cols) const {
  const int64_t n = rows * cols;
  return static_cast<std::size_t>(2 * ceil_div(n, block_) + ceil_div(n, 2));
}

double Nf4Scheme::bits_per_weight(int64_t rows, int64_t cols) const {
  return 8.0 * static_cast<double>(packed_bytes(rows, cols)) / static_cast<double>(rows * cols);
}

// Layout: fp16 absmax of every block, then the 4-bit level indices, two per byte (low nibble first).
PackedMatrix Nf4Scheme::quantize(std::span<const float> w, int64_t rows, int64_t cols) const {
  if (rows <= 0 || cols <= 0 || rows * cols != std::ssize(w))
    throw std::invalid_argument(fmt::format("NF4: shape [{}, {}] does not match {} values", rows, cols, w.size()));
  const int64_t n = rows * cols, blocks = ceil_div(n, block_);
  PackedMatrix p{rows, cols, std::vector<uint8_t>(packed_bytes(rows, cols), 0)};
  uint8_t* scales = p.bytes.data();
  uint8_t* codes = scales + 2 * blocks;

  parallel_for(blocks, balanced_grain(blocks, 64), [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {  // blocks are even-sized: no byte is shared
      const int64_t begin = b * block_, end = std::min(n, begin + block_);
      float amax = 0;
      for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(w[i]));
      const uint16_t bits = gguf::fp32_to_fp16(amax);
      scales[2 * b] = static_cast<uint8_t>(bits & 0xFF);
      scales[2 * b + 1] = static_cast<uint8_t>(bits >> 8);
      const float stored = gguf::fp16_to_fp32(bits);
      const float inv = stored > 0 ? 1.0f / stored : 0.0f;
      for (int64_t i = begin; i < end; ++i) {
        const auto q = static_cast<uint8_t>(nf4_nearest(std::clamp(w[i] * inv, -1.0f, 1.0f)));
        codes[i / 2] = static_cast<uint8_t>(i % 2 == 0 ? (codes[i / 2] & 0xF0) | q : (codes[i / 2] & 0x0F) | (q << 4));
      }
    }
  });
  return p;
}

void Nf4Scheme::dequantize(const PackedMatrix& p, std::span<float> out) const {
  const int64_t n = p.numel(), blocks = ceil_div(n, block_);
  if (p.bytes.size() != packed_bytes(p.rows, p.cols) || std::ssize(out) != n)
    throw std::invalid_argument("NF4: dequantize of a packed matrix of the wrong size");
  const uint8_t* scales = p.bytes.data();
  const uint8_t* codes = scales + 2 * blocks;

  parallel_for(blocks, balanced_grain(blocks, 64), [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const float amax = gguf::fp16_to_fp32(static_cast<uint16_t>(scales[2 * b] | (scales[2 * b + 1] << 8)));
      const int64_t begin = b * block_, end = std::min(n, begin + block_);
      for (int64_t i = begin; i < end; ++i) {
        const int q = i % 2 == 0 ? codes[i / 2] & 0x0F : codes[i / 2] >> 4;
        out[i] = amax * kNf4Levels[q];
      }
    }
  });
}

}  // namespace infer::quant
