#include "asymmetric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gguf/ggml_types.hpp"  // fp16 conversions
#include "tensor/thread_pool.hpp"

namespace infer::quant {
namespace {

int64_t groups_of(int64_t n, int64_t g) { return (n + g - 1) / g; }

}  // namespace

AsymmetricInt4Scheme::AsymmetricInt4Scheme(int64_t group) : group_(group) {
  if (group < 2 || group % 2 != 0)
    throw std::invalid_argument(fmt::format("AsymmetricInt4Scheme: group of {} (even, ≥ 2)", group));
}

std::string AsymmetricInt4Scheme::name() const { return fmt::format("INT4 g{} asym", group_); }

std::size_t AsymmetricInt4Scheme::packed_bytes(int64_t rows, int64_t cols) const {
  const int64_t n = rows * cols;
  return static_cast<std::size_t>(3 * groups_of(n, group_) + (n + 1) / 2);  // scale + zero per group, nibbles
}

double AsymmetricInt4Scheme::bits_per_weight(int64_t rows, int64_t cols) const {
  return 8.0 * static_cast<double>(packed_bytes(rows, cols)) / static_cast<double>(rows * cols);
}

// the-change: begin AsymmetricInt4Scheme::quantize
// Layout: every group's fp16 scale, then every group's zero point (a byte), then the codes.
PackedMatrix AsymmetricInt4Scheme::quantize(std::span<const float> w, int64_t rows, int64_t cols) const {
  if (rows <= 0 || cols <= 0 || rows * cols != std::ssize(w))
    throw std::invalid_argument(fmt::format("{}: shape [{}, {}] does not match {} values", name(), rows, cols, w.size()));
  const int64_t n = rows * cols, groups = groups_of(n, group_);
  PackedMatrix p{rows, cols, std::vector<uint8_t>(packed_bytes(rows, cols), 0)};
  uint8_t* scales = p.bytes.data();
  uint8_t* zeros = scales + 2 * groups;
  uint8_t* codes = zeros + groups;

  parallel_for(groups, balanced_grain(groups, 64), [&](int64_t first, int64_t last) {
    for (int64_t gi = first; gi < last; ++gi) {  // even groups: no byte of codes is shared
      const auto begin = w.begin() + gi * group_, end = w.begin() + std::min(n, (gi + 1) * group_);
      const auto [mn, mx] = std::minmax_element(begin, end);
      const float lo = std::min(0.0f, *mn), hi = std::max(0.0f, *mx);
      const uint16_t scale_bits = gguf::fp32_to_fp16((hi - lo) / 15.0f);
      const float scale = gguf::fp16_to_fp32(scale_bits);
      scales[2 * gi] = static_cast<uint8_t>(scale_bits & 0xFF);
      scales[2 * gi + 1] = static_cast<uint8_t>(scale_bits >> 8);
      if (scale == 0) {  // an all-zero group: zero point 0, codes 0
        zeros[gi] = 0;
        continue;
      }
      const float zero = std::clamp(std::round(-lo / scale), 0.0f, 15.0f);
      zeros[gi] = static_cast<uint8_t>(zero);
      for (int64_t i = gi * group_; i < gi * group_ + (end - begin); ++i) {
        const auto q = static_cast<uint8_t>(std::clamp(std::round(w[i] / scale) + zero, 0.0f, 15.0f));
        codes[i / 2] = static_cast<uint8_t>(i % 2 == 0 ? (codes[i / 2] & 0xF0) | q : (codes[i / 2] & 0x0F) | (q << 4));
      }
    }
  });
  return p;
}
// the-change: end AsymmetricInt4Scheme::quantize

void AsymmetricInt4Scheme::dequantize(const PackedMatrix& p, std::span<float> out) const {
  const int64_t n = p.numel(), groups = groups_of(n, group_);
  if (p.bytes.size() != packed_bytes(p.rows, p.cols) || std::ssize(out) != n)
    throw std::invalid_argument(fmt::format("{}: dequantize of a packed matrix of the wrong size", name()));
  const uint8_t* scales = p.bytes.data();
  const uint8_t* zeros = scales + 2 * groups;
  const uint8_t* codes = zeros + groups;
  parallel_for(groups, balanced_grain(groups, 64), [&](int64_t first, int64_t last) {
    for (int64_t gi = first; gi < last; ++gi) {
      const float scale = gguf::fp16_to_fp32(static_cast<uint16_t>(scales[2 * gi] | (scales[2 * gi + 1] << 8)));
      const int zero = zeros[gi];
      for (int64_t i = gi * group_; i < std::min(n, (gi + 1) * group_); ++i) {
        const int q = i % 2 == 0 ? codes[i / 2] & 0x0F : codes[i / 2] >> 4;
        out[i] = static_cast<float>(q - zero) * scale;
      }
    }
  });
}

}  // namespace infer::quant
