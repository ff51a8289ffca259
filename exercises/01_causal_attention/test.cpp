// Grades exercise 01 against the library's attention (tensor/ops.hpp).
#include <cmath>

#include "catch_compat.hpp"

#include "attention_exercise.hpp"
#include "tensor/ops.hpp"
#include "test_helpers.hpp"

namespace {

std::vector<float> library_attention(const std::vector<float>& q, const std::vector<float>& k,
                                     const std::vector<float>& v, int T, int D) {
  using infer::Tensor;
  Tensor tq = Tensor::from_vector(q, {T, D}), tk = Tensor::from_vector(k, {T, D}), tv = Tensor::from_vector(v, {T, D});
  Tensor out({T, D});
  infer::ops::attention(tq, tk, tv, 1, 1, 0, out);
  return out.to_vector();
}

void check(int T, int D, float scale, unsigned seed) {
  const std::size_t n = static_cast<std::size_t>(T * D);
  const auto q = exercise::random_normal(n, scale, seed), k = exercise::random_normal(n, scale, seed + 1),
             v = exercise::random_normal(n, 1.0f, seed + 2);
  const auto got = exercise::causal_attention_one_head(q, k, v, T, D);
  const auto want = library_attention(q, k, v, T, D);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i << " (position " << i / static_cast<std::size_t>(D) << ")");
    REQUIRE(std::isfinite(got[i]));
    REQUIRE(std::fabs(got[i] - want[i]) <= 1e-4f * (1.0f + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("one position attends only to itself: out = v", "[exercise]") { check(1, 8, 1.0f, 1); }
TEST_CASE("random queries, keys and values", "[exercise]") { check(17, 16, 1.0f, 2); }
TEST_CASE("huge scores need the maximum subtracted", "[exercise]") { check(9, 8, 30.0f, 3); }
