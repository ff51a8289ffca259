// Packed matrices for the tests of chapter 06's packed-weight kernels: the CPU check of the decode
// formulas (tests/chapter_unit/test_packed_decode.cpp) and the GPU test (tests/cuda/
// test_cuda_packed.cpp) draw the same shapes and weights.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "packed_kernels.hpp"

namespace infer::test {

struct PackedShape {
  int64_t rows, cols;
};

// Shapes every format can pack. For int8, int4 g128 and NF4 they include odd column counts, where
// a 4-bit row starts in the middle of a byte and a group of 128 (block of 64) spans two rows,
// and rows shorter than a run of 8; Q8_0 and Q4_1 need whole blocks of 32 per row.
inline std::vector<PackedShape> packed_test_shapes(quant::PackedFormat format) {
  if (format == quant::PackedFormat::q8_0 || format == quant::PackedFormat::q4_1)
    return {{1, 32}, {7, 96}, {33, 160}, {130, 64}, {16, 576}};
  return {{1, 1}, {1, 129}, {7, 33}, {5, 77}, {3, 128}, {33, 255}, {130, 100}, {9, 200}, {16, 576}};
}

// A matrix quantized by the format's own scheme, with the Ŵ its dequantize() returns.
struct PackedTestMatrix {
  quant::PackedMatrix packed;
  std::vector<float> w_hat;  // rows · cols, row-major
};

// Gaussian weights whose spread changes from row to row, plus a few 8× outliers, packed.
inline PackedTestMatrix packed_test_matrix(quant::PackedFormat format, PackedShape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(static_cast<std::size_t>(s.rows * s.cols));
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < s.cols; ++c) w[r * s.cols + c] = 0.02f * (1.0f + r % 5) * dist(rng);
  for (std::size_t i = 0; i < w.size(); i += 97) w[i] *= 8.0f;
  const auto scheme = quant::scheme_for(format);
  PackedTestMatrix m{scheme->quantize(w, s.rows, s.cols), std::vector<float>(w.size())};
  scheme->dequantize(m.packed, m.w_hat);
  return m;
}

// n rows of x, uniform in [−1, 1].
inline std::vector<float> packed_test_x(int64_t n, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n * cols));
  for (float& v : x) v = dist(rng);
  return x;
}

// The largest |y[t, r] − exact| / Σ_c |x[t, c] · ŵ(r, c)| over a product y[n, rows] (row-major,
// y[t · rows + r]), the exact product computed in double from Ŵ; NaN counts as infinitely wrong.
template <class GetY>
double worst_relative_error(const PackedTestMatrix& m, std::span<const float> x, int64_t n, GetY y) {
  const int64_t rows = m.packed.rows, cols = m.packed.cols;
  double worst = 0.0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0.0, magnitude = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double term = static_cast<double>(x[t * cols + c]) * m.w_hat[r * cols + c];
        exact += term;
        magnitude += std::fabs(term);
      }
      const double got = y(t, r);
      const double ratio = std::isnan(got) ? HUGE_VAL : std::fabs(got - exact) / (magnitude + 1e-30);
      if (ratio > worst) worst = ratio;
    }
  return worst;
}

}  // namespace infer::test
