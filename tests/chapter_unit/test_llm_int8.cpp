// Chapter 06's LLM.int8 decomposition (tables/llm_int8.hpp): which columns it flags, its two
// limits (every column in fp32 is the fp32 product; no column is the W8A8 layer bit for bit),
// and what it is for: a planted outlier column is found and stops costing the other columns
// their precision.
#include "catch_compat.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "absmax.hpp"
#include "llm_int8.hpp"
#include "tiny_shapes.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

// W [out, in] with small weights, and its INT8 per-row round trip Ŵ (what W8A8 multiplies).
struct Weights {
  Tensor w, w_hat;
};
Weights weights(int64_t out, int64_t in, std::mt19937& rng) {
  Tensor w = test::random_rows(out, in, rng);
  for (int64_t i = 0; i < out * in; ++i) w.host<float>()[i] *= 0.05f;
  const AbsmaxScheme int8(8, Granularity::per_row);
  const std::vector<float> w_hat = round_trip(int8, {w.host<float>(), static_cast<std::size_t>(out * in)}, out, in);
  return {w, Tensor::from_vector(w_hat, {out, in})};
}

std::vector<float> apply(const Linear& layer, const Tensor& x) {
  Tensor y({x.dim(0), layer.out_features()});
  layer.forward(x, y);
  return y.to_vector();
}

}  // namespace

TEST_CASE("LLM.int8: a column is an outlier when |x| reaches the threshold in any row", "[quant][llm_int8]") {
  const std::vector<float> values = {0.5f, -7.0f, 6.0f, 1.0f,    // −7 and exactly 6 both count
                                     5.9f, 0.0f,  -1.0f, 2.0f,    // 5.9 does not
                                     0.0f, 0.0f,  0.0f, -30.0f};  // a single row is enough
  const Tensor x = Tensor::from_vector(values, {3, 4});
  CHECK(outlier_columns(x, 6.0f) == std::vector<int64_t>{1, 2, 3});
  CHECK(outlier_columns(x, 0.0f) == std::vector<int64_t>{0, 1, 2, 3});  // every column, zeros included
  CHECK(outlier_columns(x, std::numeric_limits<float>::infinity()).empty());
  CHECK(outlier_columns(x, 31.0f).empty());
}

TEST_CASE("LLM.int8 at threshold 0: every column in fp32, the fp32 product", "[quant][llm_int8]") {
  std::mt19937 rng(3);
  const int64_t in = 64, out = 24;
  const Weights m = weights(out, in, rng);
  OutlierCounts counts;
  const LlmInt8Linear layer(m.w_hat, m.w, 0.0f, &counts);
  for (int64_t n : {1, 5, 40}) {  // a decode row, a small batch, a prefill-sized panel
    const Tensor x = test::random_rows(n, in, rng);
    const std::vector<float> got = apply(layer, x);
    const std::vector<float> want = apply(DenseLinear(m.w), x);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
  }
  CHECK(counts.calls == 3);
  CHECK(counts.outlier_columns == counts.columns);
  CHECK(counts.outlier_elements == (1 + 5 + 40) * in);
  CHECK(counts.calls_flagged == std::vector<int64_t>(in, 3));
}

TEST_CASE("LLM.int8 at threshold ∞: the W8A8 layer bit for bit", "[quant][llm_int8]") {
  std::mt19937 rng(4);
  const int64_t in = 48, out = 16;
  const Weights m = weights(out, in, rng);
  OutlierCounts counts;
  const LlmInt8Linear layer(m.w_hat, m.w, std::numeric_limits<float>::infinity(), &counts);
  const W8A8Linear plain(m.w_hat, {});
  for (int64_t n : {1, 7, 33}) {
    Tensor x = test::random_rows(n, in, rng);
    x.host<float>()[3] = 1e4f;  // however large: nothing reaches ∞
    CHECK(apply(layer, x) == apply(plain, x));
  }
  CHECK(counts.calls == 3);
  CHECK(counts.outlier_columns == 0);
  CHECK(counts.columns == 3 * in);
}

TEST_CASE("LLM.int8: a planted outlier column is found, and the other columns keep their precision",
          "[quant][llm_int8]") {
  std::mt19937 rng(21);
  const int64_t n = 32, in = 64, out = 48, planted = 5;
  Tensor x = test::random_rows(n, in, rng);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < in; ++j) x.host<float>()[t * in + j] = std::clamp(x.host<float>()[t * in + j], -4.0f, 4.0f);
    x.host<float>()[t * in + planted] = 100.0f + t;  // ≥ 100 in every row; the others stay within ±4
  }
  const Weights m = weights(out, in, rng);
  CHECK(outlier_columns(x, 6.0f) == std::vector<int64_t>{planted});

  OutlierCounts counts;
  const LlmInt8Linear decomposed(m.w_hat, m.w, 6.0f, &counts);  // the outlier column with W's own weights
  const LlmInt8Linear int8_columns(m.w_hat, m.w_hat, 6.0f);    // ... with Ŵ's
  const W8A8Linear plain(m.w_hat, {});
  const std::vector<float> exact = apply(DenseLinear(m.w), x);
  const double e_plain = relative_error(exact, apply(plain, x));
  const double e_decomposed = relative_error(exact, apply(decomposed, x));
  const double e_int8_columns = relative_error(exact, apply(int8_columns, x));
  INFO("W8A8 " << e_plain << ", LLM.int8 " << e_decomposed << ", LLM.int8 with Ŵ's columns " << e_int8_columns);
  // The planted column sets each row's step to ~100/127 in plain W8A8, so values within ±4 keep
  // about 5 levels each side; without it the step is ~4/127.
  CHECK(e_decomposed < 0.1 * e_plain);
  CHECK(e_int8_columns < 0.5 * e_plain);  // the activations are most of it; Ŵ's own rounding stays
  CHECK(e_decomposed < e_int8_columns);
  CHECK(counts.calls_flagged[planted] == 1);
  CHECK(counts.outlier_columns == 1);
  CHECK(counts.outlier_elements == n);

  // Bytes: W8A8's INT8 (a byte a weight, an fp16 scale a row), plus W itself when its columns are used.
  CHECK(plain.weight_bytes() == static_cast<std::size_t>(out * in + 2 * out));
  CHECK(int8_columns.weight_bytes() == plain.weight_bytes());
  CHECK(decomposed.weight_bytes() == plain.weight_bytes() + static_cast<std::size_t>(4 * out * in));
}

TEST_CASE("LLM.int8: the two matrices must have one shape, the threshold be ≥ 0", "[quant][llm_int8]") {
  std::mt19937 rng(8);
  const Weights m = weights(4, 8, rng);
  const Weights other = weights(8, 4, rng);
  CHECK_THROWS_AS(LlmInt8Linear(m.w_hat, other.w, 6.0f), std::invalid_argument);
  CHECK_THROWS_AS(LlmInt8Linear(m.w_hat, m.w, -1.0f), std::invalid_argument);
  CHECK_THROWS_AS(LlmInt8Linear(m.w_hat, m.w, std::numeric_limits<float>::quiet_NaN()), std::invalid_argument);
}
