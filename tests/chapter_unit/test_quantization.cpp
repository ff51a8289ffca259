// Tests of chapter 06's quantizers (chapters/06_quantization): error bounds of the round trip on
// Gaussian and heavy-tailed (Student-t) matrices, packed sizes against the stated bits per
// weight, the Q8_0/Q4_1 blocks against lib/gguf's dequantizer (the model loader's), and the NF4
// levels against the published table and the recipe that produced it; asymmetric INT4 and the
// fp16 / bf16 / fp8 (E4M3) roundings against values worked by hand.
#include "catch_compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absmax.hpp"
#include "asymmetric.hpp"
#include "float_formats.hpp"
#include "ggml_blocks.hpp"
#include "gguf/ggml_types.hpp"
#include "nf4.hpp"
#include "quant_scheme.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// Student-t with 3 degrees of freedom: finite variance, but weights 20σ out do occur in a
// matrix of this size, as in trained models.
std::vector<float> heavy_tailed(int64_t n, uint32_t seed, float scale = 0.02f) {
  std::mt19937 rng(seed);
  std::student_t_distribution<float> dist(3.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = scale * dist(rng);
  return v;
}

// Φ⁻¹(p) by bisection on Φ(x) = ½ erfc(−x/√2), in double.
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

constexpr int64_t kRows = 192, kCols = 576;  // the default model's k/v projection shape

}  // namespace

TEST_CASE("NF4 levels are the published QLoRA values", "[quant]") {
  // arXiv:2305.14314, appendix E (and bitsandbytes' NF4 table), copied independently of nf4.hpp.
  const double published[16] = {-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                                0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
                                0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0};
  for (std::size_t i = 0; i < 16; ++i) CHECK(kNf4Levels[i] == static_cast<float>(published[i]));

  // The recipe: δ = ½(1/32 + 1/30); 8 positive levels Φ⁻¹ at linspace(1−δ, ½, 9) without the last,
  // 7 negative −Φ⁻¹ at linspace(1−δ, ½, 8) without the last, a zero, all divided by the largest.
  const double top = 1 - 0.5 * (1.0 / 32 + 1.0 / 30);
  std::vector<double> levels = {0.0};
  for (int i = 0; i < 8; ++i) levels.push_back(normal_quantile(top + (0.5 - top) * i / 8.0));
  for (int i = 0; i < 7; ++i) levels.push_back(-normal_quantile(top + (0.5 - top) * i / 7.0));
  std::sort(levels.begin(), levels.end());
  const double max = levels.back();
  for (std::size_t i = 0; i < 16; ++i) CHECK(levels[i] / max == Approx(published[i]).margin(2e-6));
}

TEST_CASE("NF4 rounds to the nearest level", "[quant]") {
  for (std::size_t i = 0; i < 16; ++i) CHECK(nf4_nearest(kNf4Levels[i]) == static_cast<int>(i));
  CHECK(nf4_nearest(-1.0f) == 0);
  CHECK(nf4_nearest(1.0f) == 15);
  CHECK(nf4_nearest(0.01f) == 7);
  CHECK(nf4_nearest(0.05f) == 8);  // nearer 0.0796 than 0
  CHECK(nf4_nearest(0.9f) == 15);
}

TEST_CASE("packed sizes equal the stated bits per weight", "[quant]") {
  const int64_t n = kRows * kCols;
  const std::vector<float> w = gaussian(n, 1);
  struct Expect {
    std::unique_ptr<QuantScheme> scheme;
    double bits;
  };
  std::vector<Expect> expect;
  expect.push_back({std::make_unique<AbsmaxScheme>(8, Granularity::per_tensor), 8.0 + 16.0 / static_cast<double>(n)});
  expect.push_back({std::make_unique<AbsmaxScheme>(8, Granularity::per_row), 8.0 + 16.0 / kCols});
  expect.push_back({std::make_unique<AbsmaxScheme>(4, Granularity::per_tensor), 4.0 + 16.0 / static_cast<double>(n)});
  expect.push_back({std::make_unique<AbsmaxScheme>(4, Granularity::per_row), 4.0 + 16.0 / kCols});
  expect.push_back({std::make_unique<AbsmaxScheme>(4, Granularity::per_group, 128), 4.125});
  expect.push_back({std::make_unique<AbsmaxScheme>(8, Granularity::per_group, 128), 8.125});
  expect.push_back({std::make_unique<Nf4Scheme>(64), 4.25});
  expect.push_back({std::make_unique<Nf4Scheme>(128), 4.125});
  expect.push_back({std::make_unique<AsymmetricInt4Scheme>(128), 4.0 + 24.0 / 128});
  expect.push_back({std::make_unique<FloatScheme>(FloatFormat::fp16), 16.0});
  expect.push_back({std::make_unique<FloatScheme>(FloatFormat::bf16), 16.0});
  expect.push_back({std::make_unique<FloatScheme>(FloatFormat::fp8_e4m3), 8.0});
  expect.push_back({std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q8_0), 8.5});
  expect.push_back({std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q4_1), 5.0});
  for (const Expect& e : expect) {
    INFO(e.scheme->name());
    const PackedMatrix p = e.scheme->quantize(w, kRows, kCols);
    CHECK(p.bytes.size() == e.scheme->packed_bytes(kRows, kCols));
    CHECK(p.bits_per_weight() == Approx(e.bits).epsilon(1e-12));
    CHECK(e.scheme->bits_per_weight(kRows, kCols) == Approx(e.bits).epsilon(1e-12));
  }
  // Odd sizes: INT4 rounds the nibbles up to whole bytes.
  const AbsmaxScheme odd(4, Granularity::per_row);
  CHECK(odd.packed_bytes(3, 5) == 3 * 2 + 8);
  const std::vector<float> small = gaussian(15, 2);
  const std::vector<float> back = round_trip(odd, small, 3, 5);
  for (std::size_t i = 0; i < small.size(); ++i) CHECK(std::fabs(back[i] - small[i]) <= 0.5f * 0.02f * 4 / 7 + 1e-6f);
}

TEST_CASE("absmax round trip: every weight within half a step of its group's scale", "[quant]") {
  const int64_t n = kRows * kCols;
  for (const bool heavy : {false, true}) {
    const std::vector<float> w = heavy ? heavy_tailed(n, 3) : gaussian(n, 3);
    for (int bits : {8, 4})
      for (Granularity g : {Granularity::per_tensor, Granularity::per_row, Granularity::per_group}) {
        const AbsmaxScheme s(bits, g, 128);
        INFO(s.name() << (heavy ? " Student-t" : " Gaussian"));
        const std::vector<float> back = round_trip(s, w, kRows, kCols);
        const int64_t gsize = s.group_size(kRows, kCols);
        for (int64_t start = 0; start < n; start += gsize) {
          float amax = 0;
          for (int64_t i = start; i < start + gsize; ++i) amax = std::max(amax, std::fabs(w[i]));
          // The stored fp16 scale is within 2^-11 (relative) of amax/qmax; the largest weight may
          // be clamped by that much.
          const float step = amax / static_cast<float>(s.qmax()) * (1 + 1.0f / 1024);
          float worst = 0;
          for (int64_t i = start; i < start + gsize; ++i)
            worst = std::max(worst, std::fabs(w[i] - back[i]));
          REQUIRE(worst <= 0.5f * step + amax * 1e-3f);
        }
      }
  }
}

TEST_CASE("relative error of each scheme on Gaussian and Student-t matrices", "[quant]") {
  const int64_t n = kRows * kCols;
  const std::vector<float> g = gaussian(n, 4), t = heavy_tailed(n, 4);
  auto err = [](const QuantScheme& s, const std::vector<float>& w) { return relative_error(w, round_trip(s, w, kRows, kCols)); };
  const AbsmaxScheme i8t(8, Granularity::per_tensor), i8r(8, Granularity::per_row), i4t(4, Granularity::per_tensor),
      i4r(4, Granularity::per_row), i4g(4, Granularity::per_group, 128);
  const Nf4Scheme nf4;
  const GgmlBlockScheme q8(gguf::GgmlType::Q8_0), q41(gguf::GgmlType::Q4_1);

  // Gaussian: the uniform-rounding estimate step/√12 relative to σ, with step = max|w|/qmax.
  CHECK(err(i8r, g) < 0.012);
  CHECK(err(i8t, g) < 0.015);
  CHECK(err(q8, g) < 0.01);
  CHECK(err(i4r, g) < 0.18);
  CHECK(err(i4g, g) < 0.15);
  CHECK(err(nf4, g) < 0.12);
  CHECK(err(q41, g) < 0.10);
  CHECK(err(nf4, g) < err(i4g, g));  // levels where the mass is beat even spacing
  CHECK(err(i4g, g) < err(i4r, g));

  // Heavy tails: one scale per tensor is set by a far-out weight and the rest collapse to few
  // levels; smaller territories buy the error back.
  CHECK(err(i4t, t) > 0.4);
  CHECK(err(i4r, t) < err(i4t, t));
  CHECK(err(i4g, t) < err(i4r, t));
  CHECK(err(nf4, t) < 0.15);
  CHECK(err(i8t, t) < 0.2);  // 8 bits forgive the same outliers far better
  CHECK(err(i8t, t) < err(i4g, t));
  CHECK(err(i8r, t) < err(i8t, t));

  // An all-zero matrix comes back as zeros (no division by a zero scale).
  const std::vector<float> zeros(static_cast<std::size_t>(n), 0.0f);
  for (const QuantScheme* s : std::initializer_list<const QuantScheme*>{&i8t, &i4g, &nf4, &q8, &q41})
    for (float x : round_trip(*s, zeros, kRows, kCols)) REQUIRE(x == 0.0f);
}

TEST_CASE("Q8_0 and Q4_1 blocks decode identically with lib/gguf's dequantize_row", "[quant]") {
  const int64_t n = kRows * kCols;
  for (const auto type : {gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_1}) {
    const GgmlBlockScheme s(type);
    INFO(s.name());
    for (const bool heavy : {false, true}) {
      const std::vector<float> w = heavy ? heavy_tailed(n, 5) : gaussian(n, 5);
      const PackedMatrix p = s.quantize(w, kRows, kCols);
      CHECK(p.bytes.size() == static_cast<std::size_t>(n / 32) * gguf::traits(type).block_bytes);
      std::vector<float> ours(static_cast<std::size_t>(n)), libs(static_cast<std::size_t>(n));
      s.dequantize(p, ours);
      gguf::dequantize_row(type, p.bytes.data(), libs.data(), n);
      REQUIRE(ours == libs);
      CHECK(relative_error(w, ours) < (type == gguf::GgmlType::Q8_0 ? 0.01 : heavy ? 0.15 : 0.1));
    }
  }
}

TEST_CASE("re-quantizing dequantized Q4_1/Q8_0 blocks reproduces them", "[quant]") {
  // What the course's reference is: Q4_1 weights dequantized to fp32. Blocks whose codes reach 0
  // and 15 (Q4_1) or ±127 (Q8_0) come back byte for byte, which is why re-quantizing the shipped
  // model to its own format shows almost no error.
  std::mt19937 rng(6);
  for (const auto type : {gguf::GgmlType::Q4_1, gguf::GgmlType::Q8_0}) {
    const GgmlBlockScheme s(type);
    INFO(s.name());
    const int64_t blocks = 2048, n = blocks * 32;
    const uint32_t bb = gguf::traits(type).block_bytes;
    std::vector<uint8_t> shipped(static_cast<std::size_t>(blocks) * bb);
    std::uniform_real_distribution<float> scale(0.001f, 0.05f), offset(-0.2f, 0.0f);
    std::uniform_int_distribution<int> code(0, 255);
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* y = shipped.data() + b * bb;
      const uint16_t d = gguf::fp32_to_fp16(scale(rng));
      y[0] = static_cast<uint8_t>(d & 0xFF);
      y[1] = static_cast<uint8_t>(d >> 8);
      if (type == gguf::GgmlType::Q4_1) {
        const uint16_t m = gguf::fp32_to_fp16(offset(rng));
        y[2] = static_cast<uint8_t>(m & 0xFF);
        y[3] = static_cast<uint8_t>(m >> 8);
        for (int j = 0; j < 16; ++j) y[4 + j] = static_cast<uint8_t>(code(rng));
        y[4] = static_cast<uint8_t>((y[4] & 0xF0) | 0x0);   // code 0 present: min is the stored m
        y[5] = static_cast<uint8_t>((y[5] & 0xF0) | 0xF);   // code 15 present: max is m + 15d
      } else {
        for (int j = 0; j < 32; ++j) y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(code(rng) % 255 - 127));  // −127 … 127
        y[2] = 127;  // max |code| present: d = max|w| / 127
      }
    }
    std::vector<float> w(static_cast<std::size_t>(n));
    gguf::dequantize_row(type, shipped.data(), w.data(), n);
    const PackedMatrix again = s.quantize(w, blocks, 32);
    int64_t same = 0;
    for (int64_t b = 0; b < blocks; ++b)
      same += std::equal(shipped.begin() + b * bb, shipped.begin() + (b + 1) * bb, again.bytes.begin() + b * bb) ? 1 : 0;
    CHECK(static_cast<double>(same) / static_cast<double>(blocks) > 0.99);
    CHECK(relative_error(w, round_trip(s, w, blocks, 32)) < 1e-3);
  }
}

TEST_CASE("quantizers refuse shapes they cannot pack", "[quant]") {
  const std::vector<float> w(48, 0.5f);
  CHECK_THROWS_AS(GgmlBlockScheme(gguf::GgmlType::Q8_0).quantize(w, 3, 16), std::invalid_argument);  // 16 % 32
  CHECK_THROWS_AS(AbsmaxScheme(4, Granularity::per_row).quantize(w, 4, 16), std::invalid_argument);    // 64 ≠ 48
  CHECK_THROWS_AS(AbsmaxScheme(3, Granularity::per_row), std::invalid_argument);
  CHECK_THROWS_AS(GgmlBlockScheme(gguf::GgmlType::Q4_K), std::invalid_argument);
}

// --- asymmetric INT4 ---

TEST_CASE("asymmetric INT4: scale (hi − lo)/15, an integer zero point, 0 exact", "[quant][asym]") {
  const AsymmetricInt4Scheme asym(4);
  // lo = −0.1, hi = 1.4: scale = 1.5/15 = 0.1, stored as fp16 0.0999755859375; zero = round(0.1/s) = 1.
  const std::vector<float> w = {-0.1f, 0.0f, 0.2f, 1.4f};
  const float s = gguf::fp16_to_fp32(gguf::fp32_to_fp16(0.1f));
  REQUIRE(s == 0.0999755859375f);
  const std::vector<float> back = round_trip(asym, w, 1, 4);
  CHECK(back[0] == -1 * s);  // code 0 − zero 1
  CHECK(back[1] == 0.0f);    // code 1 = zero: exactly 0
  CHECK(back[2] == 2 * s);   // code 3
  CHECK(back[3] == 14 * s);  // code 15
  const PackedMatrix p = asym.quantize(w, 1, 4);
  CHECK(p.bytes[2] == 1);                      // the zero point, after the fp16 scale
  CHECK(p.bytes[3] == (0 | (1 << 4)));         // codes 0 and 1
  CHECK(p.bytes[4] == (3 | (15 << 4)));        // codes 3 and 15
  // An all-zero group decodes to zeros.
  CHECK(round_trip(asym, std::vector<float>(8, 0.0f), 2, 4) == std::vector<float>(8, 0.0f));
}

TEST_CASE("asymmetric INT4 beats symmetric on one-sided groups and is no worse on Gaussian ones", "[quant][asym]") {
  // One-sided: symmetric INT4 spends its negative levels on nothing.
  const std::vector<float> w = {0.5f, 1.0f, 1.5f, 2.0f, 0.25f, 0.75f, 1.25f, 1.75f};
  const AbsmaxScheme sym(4, Granularity::per_group, 8);
  const AsymmetricInt4Scheme asym(8);
  CHECK(relative_error(w, round_trip(asym, w, 1, 8)) < 0.5 * relative_error(w, round_trip(sym, w, 1, 8)));
  const std::vector<float> g = gaussian(kRows * kCols, 11);
  const double e_sym = relative_error(g, round_trip(AbsmaxScheme(4, Granularity::per_group, 128), g, kRows, kCols));
  const double e_asym = relative_error(g, round_trip(AsymmetricInt4Scheme(128), g, kRows, kCols));
  INFO("sym " << e_sym << " asym " << e_asym);
  CHECK(e_asym < e_sym);  // 16 levels instead of 15, fitted to each group's own range
  REQUIRE_THROWS_AS(AsymmetricInt4Scheme(7), std::invalid_argument);
}

TEST_CASE("NF4 at INT4 g128's block size: the levels alone still beat uniform levels on Gaussian weights", "[quant]") {
  const std::vector<float> g = gaussian(kRows * kCols, 12);
  const double e_int4 = relative_error(g, round_trip(AbsmaxScheme(4, Granularity::per_group, 128), g, kRows, kCols));
  const double e_nf4_128 = relative_error(g, round_trip(Nf4Scheme(128), g, kRows, kCols));
  const double e_nf4_64 = relative_error(g, round_trip(Nf4Scheme(64), g, kRows, kCols));
  INFO("int4 g128 " << e_int4 << ", nf4 b128 " << e_nf4_128 << ", nf4 b64 " << e_nf4_64);
  CHECK(e_nf4_128 < e_int4);
  CHECK(e_nf4_64 < e_nf4_128);  // and a smaller block helps on top
  CHECK(Nf4Scheme(128).name() == "NF4 b128");
}

// --- floats by rounding ---

TEST_CASE("bf16 rounds to nearest, ties to even", "[quant][float]") {
  CHECK(fp32_to_bf16(1.0f) == 0x3F80);
  CHECK(fp32_to_bf16(1.0f + 0x1p-8f) == 0x3F80);             // halfway, 1.0 is even: down
  CHECK(fp32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82);         // halfway between 0x3F81 and 0x3F82: to the even one
  CHECK(fp32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);  // just above halfway: up
  CHECK(fp32_to_bf16(-2.0f) == 0xC000);
  CHECK(std::isnan(bf16_bits_to_fp32(fp32_to_bf16(NAN))));
  CHECK(bf16_bits_to_fp32(0x3F81) == 1.0f + 0x1p-7f);
}

TEST_CASE("fp8 E4M3: the OCP format's values, ties to even, saturation at 448", "[quant][float]") {
  CHECK(fp32_to_e4m3(1.0f) == 0x38);          // exponent field 7 (bias 7), mantissa 0
  CHECK(fp32_to_e4m3(1.0625f) == 0x38);       // halfway between 1 and 1.125: to the even mantissa (0)
  CHECK(fp32_to_e4m3(1.1875f) == 0x3A);       // halfway between 1.125 and 1.25: to 1.25 (mantissa 2)
  CHECK(fp32_to_e4m3(240.0f) == 0x77);        // 1.875 · 2^7
  CHECK(fp32_to_e4m3(448.0f) == 0x7E);        // the largest finite value, 1.75 · 2^8
  CHECK(fp32_to_e4m3(1000.0f) == 0x7E);       // saturates
  CHECK(fp32_to_e4m3(-448.0f) == 0xFE);
  CHECK(fp32_to_e4m3(0x1p-9f) == 0x01);       // the smallest subnormal
  CHECK(fp32_to_e4m3(0x1p-10f) == 0x00);      // halfway between 0 and 2^−9: to 0 (even)
  CHECK(fp32_to_e4m3(0.75f * 0x1p-9f) == 0x01);
  CHECK(e4m3_to_fp32(0x7E) == 448.0f);
  CHECK(e4m3_to_fp32(0x08) == 0x1p-6f);       // the smallest normal
  CHECK(e4m3_to_fp32(0x07) == 7 * 0x1p-9f);   // the largest subnormal
  CHECK(std::isnan(e4m3_to_fp32(0x7F)));
  CHECK(fp32_to_e4m3(NAN) == 0x7F);
  // Every code's value maps back to that code.
  for (int code = 0; code < 0x7F; ++code) {
    INFO(code);
    CHECK(fp32_to_e4m3(e4m3_to_fp32(static_cast<uint8_t>(code))) == code);
    CHECK(fp32_to_e4m3(e4m3_to_fp32(static_cast<uint8_t>(code | 0x80))) == (code == 0 ? 0x80 : (code | 0x80)));
  }
}

TEST_CASE("floats by rounding: error follows the mantissa width", "[quant][float]") {
  const std::vector<float> g = gaussian(kRows * kCols, 13, 0.1f);
  const double e16 = relative_error(g, round_trip(FloatScheme(FloatFormat::fp16), g, kRows, kCols));
  const double ebf = relative_error(g, round_trip(FloatScheme(FloatFormat::bf16), g, kRows, kCols));
  const double e8 = relative_error(g, round_trip(FloatScheme(FloatFormat::fp8_e4m3), g, kRows, kCols));
  INFO("fp16 " << e16 << " bf16 " << ebf << " fp8 " << e8);
  // Round to nearest: a relative error of at most half a unit, 2^−11 (fp16), 2^−8 (bf16), 2^−4
  // (E4M3), for values in the normal range; the Frobenius ratio is below that bound.
  CHECK(e16 < 0x1p-11);
  CHECK(ebf < 0x1p-8);
  CHECK(ebf > 4 * e16);
  CHECK(e8 < 0x1p-4 * 1.2);  // a few weights of 0.1σ sit in E4M3's subnormal range, where steps are absolute
  CHECK(e8 > 4 * ebf);
}
