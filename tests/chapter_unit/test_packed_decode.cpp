// The decode formulas of chapter 06's CUDA kernels (chapters/06_quantization/packed/cuda/
// packed_decode.hpp), run on the CPU: the same inline functions the GPU kernels call, checked
// against each scheme's own dequantize() on machines without a GPU.
//
//   decode_at, decode8      bit for bit equal to dequantize() (same products, same order)
//   lane_partial            32 lanes run one after another and added: the warp kernel's sum,
//                           within 1e-5 of Σ|x·ŵ| of the double-precision product of
//                           dequantize()'s matrix (float sums of ≤ 600 terms: ~1e-6 expected)
//   half_to_float           equal to lib/gguf's fp16_to_fp32 for all 65 536 bit patterns
//
// The shapes (tests/packed_test_data.hpp) include odd column counts, where 4-bit rows start in
// the middle of a byte and groups of 128 (blocks of 64) span rows, and tails of fewer than 8
// columns.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/packed_decode.hpp"
#include "gguf/ggml_types.hpp"
#include "nf4.hpp"
#include "packed_test_data.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <PackedFormat F>
void check_format() {
  for (const test::PackedShape s : test::packed_test_shapes(F)) {
    CAPTURE(format_flag(F), s.rows, s.cols);
    const test::PackedTestMatrix m = test::packed_test_matrix(F, s, static_cast<uint32_t>(s.rows * 1000 + s.cols));
    const uint8_t* bytes = m.packed.bytes.data();
    auto ref = [&](int64_t r, int64_t c) { return m.w_hat[r * s.cols + c]; };

    // One weight at a time, and runs of 8.
    int64_t mismatches = 0;
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c)
        if (!same_bits(packed::decode_at<F>(bytes, s.rows, s.cols, r, c), ref(r, c))) ++mismatches;
    CHECK(mismatches == 0);
    mismatches = 0;
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c0 = 0; c0 < s.cols; c0 += 8) {
        float v[8];
        const int valid = packed::decode8<F>(bytes, s.rows, s.cols, r, c0, v);
        REQUIRE(valid == std::min<int64_t>(8, s.cols - c0));
        for (int j = 0; j < 8; ++j)
          if (!same_bits(v[j], j < valid ? ref(r, c0 + j) : 0.0f)) ++mismatches;
      }
    CHECK(mismatches == 0);

    // The warp kernel's arithmetic: 32 lanes' partial sums over up to 8 x rows.
    constexpr int kTile = 8;
    for (const int n : {1, 5, 8}) {
      CAPTURE(n);
      const std::vector<float> x = test::packed_test_x(n, s.cols, static_cast<uint32_t>(n));
      std::vector<float> y(static_cast<std::size_t>(n * s.rows));
      for (int64_t r = 0; r < s.rows; ++r) {
        float acc[kTile] = {};
        for (int lane = 0; lane < 32; ++lane) {
          float lane_acc[kTile] = {};
          packed::lane_partial<F, kTile>(bytes, s.rows, s.cols, r, x.data(), n, lane, 32, lane_acc);
          for (int t = 0; t < kTile; ++t) acc[t] += lane_acc[t];
        }
        for (int t = 0; t < n; ++t) y[t * s.rows + r] = acc[t];
        for (int t = n; t < kTile; ++t) CHECK(acc[t] == 0.0f);  // rows past n untouched
      }
      CHECK(test::worst_relative_error(m, x, n, [&](int64_t t, int64_t r) { return y[t * s.rows + r]; }) <= 1e-5);
    }
  }
}

}  // namespace

TEST_CASE("packed decode: half_to_float equals lib/gguf's fp16_to_fp32 for every pattern", "[quant][packed]") {
  int64_t mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = packed::half_to_float(static_cast<uint16_t>(h)), b = gguf::fp16_to_fp32(static_cast<uint16_t>(h));
    if (!(same_bits(a, b) || (std::isnan(a) && std::isnan(b)))) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("packed decode: NF4 levels equal nf4.hpp's table", "[quant][packed]") {
  for (int q = 0; q < 16; ++q) CHECK(same_bits(packed::nf4_level(q), kNf4Levels[q]));
}

TEST_CASE("packed decode: every format's decode equals its scheme's dequantize", "[quant][packed]") {
  SECTION("int8 per row") { check_format<PackedFormat::int8_per_row>(); }
  SECTION("int4 g128") { check_format<PackedFormat::int4_g128>(); }
  SECTION("nf4") { check_format<PackedFormat::nf4>(); }
  SECTION("q8_0") { check_format<PackedFormat::q8_0>(); }
  SECTION("q4_1") { check_format<PackedFormat::q4_1>(); }
}
