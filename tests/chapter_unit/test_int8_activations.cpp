// Tests of chapter 06's int8-activation kernels (chapters/06_quantization/packed/cpu/int8_activations.cpp).
//
// 1. The rounding of x: dx = max |x| / 127 per block of 32, |x − dx·qx| ≤ dx/2, Σ x kept.
// 2. The kernel computes what int8_activations.hpp says, read off the packed bytes here, in
//    double: Σ_c ŵ_c · dx·qx_c, plus for q4_1 the offset's exact part m·Σ_c (x_c − dx·qx_c), and
//    for nf4 the levels as int8 (ŵ = a·(1/127) · round(127·L)). Up to fp32 summation order:
//    |y − y_ref| ≤ 1e-5 · Σ |terms|.
// 3. The stated bound against the fp32 path (dequantize, then multiply by x itself):
//    |y − Σ ŵ·x| ≤ Σ_c |ŵ_c − m_c| · dx_c / 2  (+ nf4: Σ_c |x_c| · a_c / 254) + fp32 slack,
//    m the q4_1 block's offset (0 for the other formats).
// 4. Where the int8 path does not apply (n ≥ 32, formats without the kernel) packed_matmul_cpu
//    with Activations::int8 returns the fp32 path's bits.
#include "catch_compat.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "gguf/ggml_types.hpp"
#include "int8_activations.hpp"
#include "nf4.hpp"
#include "packed_kernels.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

std::vector<float> gaussian(int64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::uniform_int_distribution<int> pick(0, 199);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& e : v) e = pick(rng) == 0 ? 30 * normal(rng) : normal(rng);  // a few outliers, as activations have
  return v;
}

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return gguf::fp16_to_fp32(h);
}

// The weights the int8 kernel multiplies with (ŵ for q8_0 and q4_1; nf4 with its levels as int8),
// and q4_1's per-block offset m (0 elsewhere), both [rows, cols].
struct KernelWeights {
  std::vector<double> w, offset;
};

KernelWeights kernel_weights(PackedFormat f, const PackedMatrix& p, const std::vector<float>& w_hat) {
  const int64_t rows = p.rows, cols = p.cols;
  KernelWeights k{std::vector<double>(w_hat.begin(), w_hat.end()), std::vector<double>(w_hat.size(), 0.0)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      if (f == PackedFormat::q4_1) {
        k.offset[i] = f16_at(p.bytes.data() + r * (cols / 32) * 20 + (c / 32) * 20 + 2);
      } else if (f == PackedFormat::nf4) {
        const float a = f16_at(p.bytes.data() + 2 * (i / 64));
        const uint8_t byte = p.bytes[2 * (rows * cols / 64) + i / 2];
        const int code = (i % 2) ? byte >> 4 : byte & 15;
        k.w[i] = static_cast<double>(a * (1.0f / 127.0f)) * std::lround(127.0 * kNf4Levels[code]);
      }
    }
  return k;
}

}  // namespace

TEST_CASE("quantize_activations_int8 rounds each block of 32 to its own absmax / 127", "[quant][int8]") {
  std::vector<float> x = gaussian(2 * 64, 1.0f, 7);
  x[5] = 254.0f;  // block 0's absmax: dx = 2
  for (int j = 32; j < 64; ++j) x[j] = 0.0f;  // block 1: all zero
  Int8Activations a;
  quantize_activations_int8(x.data(), 2, 64, a);
  REQUIRE(a.blocks.size() == 4);
  CHECK(a.blocks[0].scale == 2.0f);
  CHECK(a.q[5] == 127);
  CHECK(a.blocks[1].scale == 0.0f);
  for (int j = 32; j < 64; ++j) CHECK(a.q[j] == 0);
  for (int64_t b = 0; b < 4; ++b) {
    double sum = 0;
    for (int64_t j = 0; j < 32; ++j) {
      const float v = x[b * 32 + j];
      sum += v;
      CHECK(std::abs(a.q[b * 32 + j]) <= 127);
      CHECK(std::fabs(v - a.blocks[b].scale * a.q[b * 32 + j]) <= 0.5f * a.blocks[b].scale * 1.0001f);
    }
    CHECK(std::fabs(a.blocks[b].sum - sum) <= 1e-4 * (1 + std::fabs(sum)));
  }
  CHECK_THROWS_AS(quantize_activations_int8(x.data(), 1, 48, a), std::invalid_argument);
}

TEST_CASE("the int8-activation kernels compute the stated integer products, within the stated bound of fp32",
          "[quant][int8]") {
  uint32_t seed = 11;
  for (PackedFormat format : {PackedFormat::q8_0, PackedFormat::q4_1, PackedFormat::nf4}) {
    const auto scheme = scheme_for(format);
    // 96 columns: an odd number of blocks (q4_1's two-blocks-at-a-time decode kernel ends on one)
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 64}, {7, 128}, {33, 576}, {5, 1536}, {3, 96}}) {
      if (!int8_activations_supported(format, cols)) continue;  // nf4: a multiple of 64
      const std::vector<float> w = gaussian(rows * cols, 0.02f, ++seed);
      const PackedMatrix packed = scheme->quantize(w, rows, cols);
      std::vector<float> w_hat(w.size());
      scheme->dequantize(packed, w_hat);
      const KernelWeights k = kernel_weights(format, packed, w_hat);
      for (int64_t n : {1, 3, 4, 9, 31}) {
        INFO(fmt::format("{} [{}, {}], n = {}", format_flag(format), rows, cols, n));
        const std::vector<float> x = gaussian(n * cols, 1.0f, ++seed);
        Int8Activations a;
        quantize_activations_int8(x.data(), n, cols, a);
        std::vector<float> y(static_cast<std::size_t>(n * rows), NAN);
        packed_matmul_int8_cpu(format, packed.bytes.data(), rows, cols, x.data(), n, y.data());
        std::vector<float> y_api(y.size(), NAN);  // the same through packed_matmul_cpu's dispatch
        packed_matmul_cpu(format, packed.bytes.data(), rows, cols, x.data(), n, y_api.data(), Activations::int8);
        CHECK(std::memcmp(y.data(), y_api.data(), y.size() * sizeof(float)) == 0);
        double worst_formula = 0, worst_bound = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t r = 0; r < rows; ++r) {
            double ref = 0, magnitude = 0, exact = 0, bound = 0;
            for (int64_t c = 0; c < cols; ++c) {
              const int64_t wi = r * cols + c, xi = i * cols + c, b = xi / 32;
              const double x_hat = static_cast<double>(a.blocks[b].scale) * a.q[xi];
              const double term = k.w[wi] * x_hat + k.offset[wi] * (x[xi] - x_hat);
              ref += term;
              magnitude += std::fabs(term);
              exact += static_cast<double>(w_hat[wi]) * x[xi];
              bound += std::fabs(w_hat[wi] - k.offset[wi]) * a.blocks[b].scale / 2;  // q4_1: only d·q meets the rounded x
              if (format == PackedFormat::nf4) bound += std::fabs(x[xi]) * f16_at(packed.bytes.data() + 2 * (wi / 64)) / 254;
            }
            const double got = y[i * rows + r];
            worst_formula = std::max(worst_formula, std::fabs(got - ref) / (1e-5 * magnitude + 1e-30));
            worst_bound = std::max(worst_bound, std::fabs(got - exact) / (bound + 1e-5 * magnitude + 1e-30));
          }
        CHECK(worst_formula <= 1.0);
        CHECK(worst_bound <= 1.0);
      }
    }
  }
}

TEST_CASE("int8 activations leave prefill-sized products and other formats on the fp32 path", "[quant][int8]") {
  const int64_t rows = 40, cols = 576;
  for (PackedFormat format : kPackedFormats) {
    const std::vector<float> w = gaussian(rows * cols, 0.02f, 3);
    const PackedMatrix packed = scheme_for(format)->quantize(w, rows, cols);
    for (int64_t n : {1, 5, 32, 64}) {
      if (has_int8_activation_kernel(format) && n < 32) continue;  // the int8 path: the test above
      INFO(fmt::format("{} n = {}", format_flag(format), n));
      const std::vector<float> x = gaussian(n * cols, 1.0f, 4);
      std::vector<float> y32(static_cast<std::size_t>(n * rows)), y8(y32.size());
      packed_matmul_cpu(format, packed.bytes.data(), rows, cols, x.data(), n, y32.data(), Activations::fp32);
      packed_matmul_cpu(format, packed.bytes.data(), rows, cols, x.data(), n, y8.data(), Activations::int8);
      CHECK(std::memcmp(y32.data(), y8.data(), y32.size() * sizeof(float)) == 0);
    }
  }
  std::vector<uint8_t> bytes(4096);
  std::vector<float> x(96), y(2);
  CHECK_THROWS_AS(packed_matmul_int8_cpu(PackedFormat::int4_g128, bytes.data(), 2, 64, x.data(), 1, y.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(packed_matmul_int8_cpu(PackedFormat::nf4, bytes.data(), 2, 96, x.data(), 1, y.data()),
                  std::invalid_argument);  // nf4 needs columns in runs of 64
}
