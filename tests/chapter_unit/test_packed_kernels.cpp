// Tests of chapter 06's CPU kernels (chapters/06_quantization/packed/cpu/packed_kernels.cpp): every
// format's matrix product equals dequantize-then-multiply — the scheme's own dequantize(), then
// a product summed in double — on random shapes, odd ones included (rows and columns that are
// multiples of nothing, groups of 128 and blocks of 64 that straddle rows, rows that start in
// the high nibble of a byte), for n = 1, 3, 17 (registers) and 64 (decoded panels + sgemm).
//
// Tolerance: the kernel multiplies exactly the dequantized weights and differs only in the
// order of its fp32 sums, so |y − y_ref| ≤ 1e-5 · Σ_c |x_c · ŵ_c| (fp32 round-off over at most
// a few thousand terms; the bound is ~50× what fp32 summation of these lengths can lose in
// the worst case seen). The embedding lookup (PackedEmbedding) must equal dequantize() bit for bit.
#include "catch_compat.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "packed_kernels.hpp"
#include "packed_linear.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

// Gaussian weights with a few outliers 20σ out, as trained matrices have.
std::vector<float> random_weights(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::uniform_int_distribution<int> pick(0, 499);
  std::vector<float> w(static_cast<std::size_t>(n));
  for (float& v : w) v = pick(rng) == 0 ? 20 * normal(rng) : normal(rng);
  return w;
}

std::vector<float> random_x(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) v = normal(rng);
  return x;
}

bool ggml(PackedFormat f) { return f == PackedFormat::q8_0 || f == PackedFormat::q4_1; }

struct Shape2 {
  int64_t rows, cols;
};

// Odd shapes for the formats with flat groups (int8 per row, int4 g128, nf4): 1 × 1, odd
// columns (rows start mid-byte), columns that are not a multiple of the group (groups span
// rows), and the model's own widths.
const std::vector<Shape2> kFlatShapes = {{1, 1}, {3, 7}, {5, 33}, {17, 129}, {7, 130}, {13, 200}, {9, 576}, {11, 1000}, {4, 1536}};
// q8_0 and q4_1 need columns in blocks of 32.
const std::vector<Shape2> kGgmlShapes = {{1, 32}, {3, 64}, {17, 96}, {5, 160}, {13, 576}, {7, 1536}};

const std::vector<int64_t> kBatch = {1, 3, 17, 64};

}  // namespace

TEST_CASE("packed_matmul_cpu equals dequantize-then-multiply for every format", "[quant][kernels]") {
  uint32_t seed = 1;
  for (PackedFormat format : kPackedFormats) {
    const auto scheme = scheme_for(format);
    for (const Shape2& s : ggml(format) ? kGgmlShapes : kFlatShapes) {
      const std::vector<float> w = random_weights(s.rows * s.cols, ++seed);
      const PackedMatrix packed = scheme->quantize(w, s.rows, s.cols);
      std::vector<float> w_hat(w.size());
      scheme->dequantize(packed, w_hat);
      for (int64_t n : kBatch) {
        INFO(fmt::format("{} [{}, {}], n = {}", format_flag(format), s.rows, s.cols, n));
        const std::vector<float> x = random_x(n * s.cols, ++seed);
        std::vector<float> y(static_cast<std::size_t>(n * s.rows), NAN);
        packed_matmul_cpu(format, packed.bytes.data(), s.rows, s.cols, x.data(), n, y.data());
        double worst = 0;  // the largest error as a fraction of the tolerance
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t r = 0; r < s.rows; ++r) {
            double ref = 0, magnitude = 0;
            for (int64_t c = 0; c < s.cols; ++c) {
              const double p = static_cast<double>(x[i * s.cols + c]) *
                               static_cast<double>(w_hat[r * s.cols + c]);
              ref += p;
              magnitude += std::fabs(p);
            }
            const double err = std::fabs(static_cast<double>(y[i * s.rows + r]) - ref);
            worst = std::max(worst, err / (1e-5 * magnitude + 1e-30));
          }
        }
        CHECK(worst <= 1.0);
      }
    }
  }
}

TEST_CASE("packed_gather_rows_cpu returns dequantize()'s rows bit for bit", "[quant][kernels]") {
  uint32_t seed = 100;
  for (PackedFormat format : kPackedFormats) {
    const auto scheme = scheme_for(format);
    for (const Shape2& s : ggml(format) ? kGgmlShapes : kFlatShapes) {
      INFO(fmt::format("{} [{}, {}]", format_flag(format), s.rows, s.cols));
      const std::vector<float> w = random_weights(s.rows * s.cols, ++seed);
      const PackedMatrix packed = scheme->quantize(w, s.rows, s.cols);
      std::vector<float> w_hat(w.size());
      scheme->dequantize(packed, w_hat);
      // Every row, in reverse, then the first and last again.
      std::vector<int32_t> ids;
      for (int64_t r = s.rows - 1; r >= 0; --r) ids.push_back(static_cast<int32_t>(r));
      ids.push_back(0);
      ids.push_back(static_cast<int32_t>(s.rows - 1));
      const auto n = std::ssize(ids);
      std::vector<float> out(static_cast<std::size_t>(n * s.cols), NAN);
      packed_gather_rows_cpu(format, packed.bytes.data(), s.rows, s.cols, ids.data(), n, out.data());
      int64_t differing = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < s.cols; ++c)
          differing += out[i * s.cols + c] != w_hat[ids[static_cast<std::size_t>(i)] * s.cols + c];
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("packed kernels refuse what they cannot do", "[quant][kernels]") {
  const std::vector<uint8_t> bytes(4096, 0);
  const std::vector<float> x(256, 1.0f);
  std::vector<float> y(256);
  for (PackedFormat f : {PackedFormat::q8_0, PackedFormat::q4_1}) {
    CHECK_THROWS_AS(packed_matmul_cpu(f, bytes.data(), 2, 48, x.data(), 1, y.data()), std::invalid_argument);
    const int32_t id = 0;
    CHECK_THROWS_AS(packed_gather_rows_cpu(f, bytes.data(), 2, 48, &id, 1, y.data()), std::invalid_argument);
  }
  CHECK_THROWS_AS(packed_matmul_cpu(PackedFormat::nf4, bytes.data(), 0, 64, x.data(), 1, y.data()), std::invalid_argument);
  CHECK_THROWS_AS(packed_matmul_cpu(PackedFormat::nf4, nullptr, 2, 64, x.data(), 1, y.data()), std::invalid_argument);
  const int32_t bad = 2;
  CHECK_THROWS_AS(packed_gather_rows_cpu(PackedFormat::int8_per_row, bytes.data(), 2, 64, &bad, 1, y.data()),
                  std::invalid_argument);
#ifndef INFER_HAVE_CUDA
  CHECK_THROWS_WITH(packed_matmul_cuda(PackedFormat::nf4, bytes.data(), 2, 64, x.data(), 1, y.data()),
                    Catch::Contains("built without CUDA"));
#endif
}

TEST_CASE("format flags round-trip and name their schemes", "[quant][kernels]") {
  for (PackedFormat f : kPackedFormats) CHECK(parse_format_flag(format_flag(f)) == f);
  CHECK_FALSE(parse_format_flag("int3").has_value());
  CHECK_FALSE(parse_format_flag("").has_value());
  CHECK(scheme_for(PackedFormat::int4_g128)->bits_per_weight(576, 576) == Approx(4.125));
  CHECK(scheme_for(PackedFormat::nf4)->name() == "NF4");
  CHECK(scheme_for(PackedFormat::q4_1)->bits_per_weight(576, 576) == Approx(5.0));
}

TEST_CASE("PackedLinear multiplies and gathers from its packed bytes on the CPU", "[quant][kernels]") {
  const int64_t rows = 37, cols = 192, n = 5;
  const std::vector<float> w = random_weights(rows * cols, 7);
  const Tensor weight = Tensor::from_vector(w, {rows, cols});
  for (PackedFormat format : kPackedFormats) {
    INFO(format_flag(format));
    const PackedLinear linear(weight, format, Device::cpu());
    const auto scheme = scheme_for(format);
    const PackedMatrix packed = scheme->quantize(w, rows, cols);
    CHECK(linear.weight_bytes() == packed.bytes.size());
    CHECK(linear.storage() == scheme->name());
    CHECK(linear.in_features() == cols);
    CHECK(linear.out_features() == rows);

    const Tensor x = Tensor::from_vector(random_x(n * cols, 8), {n, cols});
    Tensor y({n, rows});
    linear.forward(x, y);
    std::vector<float> expected(static_cast<std::size_t>(n * rows));
    packed_matmul_cpu(format, packed.bytes.data(), rows, cols, x.host<float>(), n, expected.data());
    CHECK(y.to_vector() == expected);

    const std::vector<int32_t> ids = {3, 0, 36};
    Tensor rows_out({3, cols});
    const PackedEmbedding embedding(linear);
    embedding.lookup(ids, rows_out);
    std::vector<float> w_hat(w.size());
    scheme->dequantize(packed, w_hat);
    const std::vector<float> got = rows_out.to_vector();
    CHECK(std::vector<float>(got.begin(), got.begin() + cols) ==
          std::vector<float>(w_hat.begin() + 3 * cols, w_hat.begin() + 4 * cols));

    Tensor wrong({n, rows + 1});
    CHECK_THROWS_AS(linear.forward(x, wrong), std::invalid_argument);
    const std::vector<int32_t> outside = {static_cast<int32_t>(rows)};
    Tensor one({1, cols});
    CHECK_THROWS_AS(embedding.lookup(outside, one), std::invalid_argument);
    CHECK(embedding.shares_storage_with(linear));
  }
}

TEST_CASE("PackedLinears can share one buffer, each at its offset", "[quant][kernels]") {
  const int64_t rows = 37, cols = 192;
  const Tensor a = Tensor::from_vector(random_weights(rows * cols, 3), {rows, cols});
  const Tensor b = Tensor::from_vector(random_weights(rows * cols, 4), {rows, cols});
  const Tensor x = Tensor::from_vector(random_x(2 * cols, 5), {2, cols});
  const PackedFormat format = PackedFormat::q4_1;
  const std::size_t size = scheme_for(format)->packed_bytes(rows, cols), offset = (size + 63) / 64 * 64;
  const auto buffer = std::make_shared<Storage>(Device::cpu(), offset + size);
  const PackedLinear first(pack_weight(a, format), format, buffer, 0);
  const PackedLinear second(pack_weight(b, format), format, buffer, offset);
  CHECK(second.data() == first.data() + offset);
  CHECK(second.weight_bytes() == size);  // its own bytes, not the buffer's
  for (const auto& [shared, weight] : {std::pair{&first, &a}, std::pair{&second, &b}}) {
    const PackedLinear alone(*weight, format, Device::cpu());
    Tensor y({2, rows}), expected({2, rows});
    shared->forward(x, y);
    alone.forward(x, expected);
    CHECK(y.to_vector() == expected.to_vector());
  }
  // A buffer too small for the bytes at that offset is refused before anything is copied.
  CHECK_THROWS_AS(PackedLinear(pack_weight(a, format), format, buffer, offset + 1), std::out_of_range);
  CHECK_THROWS_AS(PackedLinear(pack_weight(a, format), format, nullptr, 0), std::invalid_argument);
}
