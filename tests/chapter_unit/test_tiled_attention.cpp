// Chapter 02's tiled attention (chapters/02_kv_cache/tables/tiled_attention.hpp): the prefill
// kernel in Bq × Bk tiles with an online softmax, and the decode form split over the keys
// (FlashDecoding) whose partial softmaxes are merged. Both must compute plain attention: checked
// against attention written out from its definition here (double, log-sum-exp) and against
// ops::attention, for every tile size, non-multiple lengths, grouped heads, a cache before the
// queries (pos0 > 0), uneven and empty chunks, and scores that do or never raise the running max.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"

#include "tensor/ops.hpp"
#include "tiled_attention.hpp"
#include "tiny_shapes.hpp"

using namespace infer;
using namespace infer::kv;
using infer::test::random_rows;

namespace {

// Causal grouped-query attention from its definition, in double: query t (position pos0 + t),
// head h, over keys 0 … pos0 + t of key/value head h / (H / H_kv).
std::vector<double> reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, int H, int H_kv, int64_t pos0) {
  const int64_t T = q.dim(0), D = q.dim(1) / H, kv_stride = k.dim(1);
  const float *Q = q.host<float>(), *K = k.host<float>(), *V = v.host<float>();
  std::vector<double> out(static_cast<std::size_t>(T * H * D), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / H_kv), n = pos0 + t + 1;
      std::vector<double> s(static_cast<std::size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < D; ++i) dot += double{Q[t * H * D + h * D + i]} * K[j * kv_stride + g * D + i];
        s[j] = dot / std::sqrt(static_cast<double>(D));
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double x : s) sum += std::exp(x - m);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < D; ++i) out[(t * H + h) * D + i] += std::exp(s[j] - m) / sum * V[j * kv_stride + g * D + i];
    }
  return out;
}

// Every element of got within fp32 round-off of want.
void require_close(const Tensor& got, const std::vector<double>& want) {
  const std::vector<float> g = got.to_vector();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    REQUIRE(std::isfinite(g[i]));
    REQUIRE(std::fabs(g[i] - want[i]) <= 2e-5 * (1.0 + std::fabs(want[i])));
  }
}
void require_close(const Tensor& got, const Tensor& want) {
  const std::vector<float> w = want.to_vector();
  require_close(got, std::vector<double>(w.begin(), w.end()));
}

struct Case {
  int H, H_kv;
  int64_t D, T, pos0;
};

// q[T, H·D], k and v [pos0 + T, H_kv·D]; `scale` multiplies q and k (large: huge scores).
struct Inputs {
  Tensor q, k, v;
};
Inputs random_inputs(const Case& c, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  Inputs in{random_rows(c.T, c.H * c.D, rng), random_rows(c.pos0 + c.T, c.H_kv * c.D, rng), random_rows(c.pos0 + c.T, c.H_kv * c.D, rng)};
  for (Tensor* x : {&in.q, &in.k})
    for (int64_t i = 0; i < x->numel(); ++i) x->host<float>()[i] *= scale;
  return in;
}

// The tiled kernel against the definition and against ops::attention.
void check_tiled(const Case& c, const Inputs& in, Tiles tiles) {
  INFO("H " << c.H << " / H_kv " << c.H_kv << ", D " << c.D << ", T " << c.T << ", pos0 " << c.pos0 << ", tiles " << tiles.queries
            << " × " << tiles.keys);
  Tensor out({c.T, c.H * c.D}), lib({c.T, c.H * c.D});
  tiled_attention(in.q, in.k, in.v, c.H, c.H_kv, c.pos0, tiles, out);
  require_close(out, reference_attention(in.q, in.k, in.v, c.H, c.H_kv, c.pos0));
  ops::attention(in.q, in.k, in.v, c.H, c.H_kv, c.pos0, lib);
  require_close(out, lib);
}

// The last row of k and v is the decode position; q[1, H·D].
void check_split(const Inputs& in, int H, int H_kv, const std::vector<int64_t>& bounds) {
  INFO("bounds " << [&] {
    std::string s;
    for (int64_t b : bounds) s += std::to_string(b) + " ";
    return s;
  }());
  const int64_t n = bounds.back();
  Tensor out({1, in.q.dim(1)}), unsplit({1, in.q.dim(1)}), lib({1, in.q.dim(1)});
  split_decode_attention(in.q, in.k, in.v, H, H_kv, bounds, out);
  const std::vector<int64_t> whole{0, n};
  split_decode_attention(in.q, in.k, in.v, H, H_kv, whole, unsplit);
  require_close(out, unsplit);
  require_close(out, reference_attention(in.q, in.k, in.v, H, H_kv, n - 1));
  ops::attention(in.q, in.k, in.v, H, H_kv, n - 1, lib);
  require_close(out, lib);
}

// Keys whose every element is offset + slope · j: with q all ones, key j's score grows (slope > 0:
// every tile raises the running maximum) or falls (slope < 0: the first tile holds it for good)
// with j. A large negative offset makes every score very negative (exp(score) underflows to 0:
// only scores taken relative to their running maximum survive).
Inputs monotone_scores(const Case& c, float slope, unsigned seed, float offset = 0.0f) {
  std::mt19937 rng(seed);
  Inputs in{Tensor({c.T, c.H * c.D}), Tensor({c.pos0 + c.T, c.H_kv * c.D}), random_rows(c.pos0 + c.T, c.H_kv * c.D, rng)};
  std::fill_n(in.q.host<float>(), in.q.numel(), 1.0f);
  for (int64_t j = 0; j < in.k.dim(0); ++j)
    std::fill_n(in.k.host<float>() + j * in.k.dim(1), in.k.dim(1), offset + slope * static_cast<float>(j));
  return in;
}

}  // namespace

TEST_CASE("tiled attention equals plain attention for every tile size and length", "[kv][tiled]") {
  const std::vector<int64_t> sizes{1, 2, 3, 7, 16, 64};
  unsigned seed = 1;
  for (const Case& c : {Case{4, 2, 8, 1, 0}, Case{4, 2, 8, 13, 0}, Case{4, 2, 8, 37, 0}, Case{4, 2, 8, 100, 0}})
    for (int64_t bq : sizes)
      for (int64_t bk : sizes) check_tiled(c, random_inputs(c, seed++), {bq, bk});
}

TEST_CASE("tiled attention: grouped heads, head sizes off the vector width, a cache before the queries", "[kv][tiled]") {
  unsigned seed = 100;
  // H / H_kv = 1, 2, 3, 4; D = 5 and 13 leave a tail after the dot product's groups of eight.
  for (const Case& c : {Case{3, 3, 8, 21, 0}, Case{6, 2, 5, 21, 0}, Case{9, 3, 13, 19, 0}, Case{4, 1, 16, 33, 0},
                        // pos0 > 0: the queries are the last T of pos0 + T positions (a chunked prefill)
                        Case{4, 2, 8, 1, 1}, Case{4, 2, 8, 9, 23}, Case{6, 2, 5, 17, 64}, Case{9, 3, 13, 30, 7}})
    for (const Tiles tiles : {Tiles{1, 1}, Tiles{3, 7}, Tiles{7, 3}, Tiles{16, 16}, Tiles{64, 64}}) check_tiled(c, random_inputs(c, seed++), tiles);
}

TEST_CASE("tiled attention: scores that raise the running maximum at every tile, and scores that never do", "[kv][tiled]") {
  for (const Case& c : {Case{4, 2, 8, 40, 0}, Case{4, 2, 8, 24, 16}})
    for (const Tiles tiles : {Tiles{1, 1}, Tiles{4, 4}, Tiles{3, 7}, Tiles{16, 5}}) {
      check_tiled(c, monotone_scores(c, 0.3f, 7), tiles);   // rising: every tile has a larger maximum
      check_tiled(c, monotone_scores(c, -0.3f, 8), tiles);  // falling: key 0 holds the maximum for good
      check_tiled(c, monotone_scores(c, 0.3f, 9, -60.0f), tiles);  // every score below −130: a maximum started at 0 underflows
    }
}

TEST_CASE("tiled attention: huge scores keep exp finite", "[kv][tiled]") {
  const Case c{4, 2, 8, 29, 3};
  for (const Tiles tiles : {Tiles{1, 1}, Tiles{5, 4}, Tiles{16, 16}}) check_tiled(c, random_inputs(c, 300, 30.0f), tiles);
}

TEST_CASE("tiled attention refuses tiles below 1 and shapes that do not fit", "[kv][tiled]") {
  const Case c{4, 2, 8, 5, 0};
  const Inputs in = random_inputs(c, 9);
  Tensor out({5, 32});
  CHECK_THROWS_AS(tiled_attention(in.q, in.k, in.v, 4, 2, 0, {0, 4}, out), std::invalid_argument);
  CHECK_THROWS_AS(tiled_attention(in.q, in.k, in.v, 4, 2, 0, {4, 0}, out), std::invalid_argument);
  CHECK_THROWS_AS(tiled_attention(in.q, in.k, in.v, 4, 3, 0, {4, 4}, out), std::invalid_argument);  // 4 heads cannot share 3
  CHECK_THROWS_AS(tiled_attention(in.q, in.k, in.v, 4, 2, 1, {4, 4}, out), std::invalid_argument);  // pos0 + T > the 5 key rows
  Tensor wrong({5, 16});
  CHECK_THROWS_AS(tiled_attention(in.q, in.k, in.v, 4, 2, 0, {4, 4}, wrong), std::invalid_argument);
}

TEST_CASE("split decode: S = 1 … 8 even chunks equal the unsplit softmax", "[kv][flash-decoding]") {
  unsigned seed = 400;
  for (int64_t n : {1, 5, 37, 100})
    for (int64_t S = 1; S <= 8; ++S) {  // n = 1 and 5: S > n leaves chunks empty
      const Case c{6, 2, 8, 1, n - 1};
      check_split(random_inputs(c, seed++), c.H, c.H_kv, even_split(n, S));
    }
}

TEST_CASE("split decode: uneven chunks and empty ones", "[kv][flash-decoding]") {
  const Case c{9, 3, 13, 1, 36};  // 37 keys
  const Inputs in = random_inputs(c, 500);
  for (const std::vector<int64_t>& bounds : std::vector<std::vector<int64_t>>{{0, 3, 3, 10, 37},   // an empty chunk between
                                                                             {0, 0, 37},            // an empty first chunk
                                                                             {0, 37, 37},           // an empty last chunk
                                                                             {0, 36, 37},           // one key alone
                                                                             {0, 1, 2, 3, 4, 5, 6, 7, 37}})
    check_split(in, c.H, c.H_kv, bounds);
}

TEST_CASE("split decode: a later chunk with the larger maximum, and an earlier one", "[kv][flash-decoding]") {
  const Case c{4, 2, 8, 1, 39};  // 40 keys
  for (float slope : {0.3f, -0.3f})  // rising: the last chunk's maximum wins the merge; falling: the first's
    for (int64_t S : {2, 3, 8}) {
      check_split(monotone_scores(c, slope, 11), c.H, c.H_kv, even_split(40, S));
      check_split(monotone_scores(c, slope, 12, -60.0f), c.H, c.H_kv, even_split(40, S));  // every score very negative
    }
  check_split(random_inputs(c, 12, 30.0f), c.H, c.H_kv, even_split(40, 4));  // huge scores
}

TEST_CASE("merging partial softmaxes gives the state of the union", "[kv][flash-decoding]") {
  const Case c{6, 2, 8, 1, 29};  // 30 keys
  const Inputs in = random_inputs(c, 600);
  const PartialSoftmax whole = partial_softmax(in.q, in.k, in.v, c.H, c.H_kv, 0, 30);
  const std::vector<PartialSoftmax> parts{partial_softmax(in.q, in.k, in.v, c.H, c.H_kv, 0, 11),
                                          partial_softmax(in.q, in.k, in.v, c.H, c.H_kv, 11, 11),  // empty
                                          partial_softmax(in.q, in.k, in.v, c.H, c.H_kv, 11, 30)};
  CHECK(parts[1].max[0] == -std::numeric_limits<float>::infinity());
  CHECK(parts[1].sum[0] == 0.0f);
  const PartialSoftmax merged = merge_partials(parts);
  for (int h = 0; h < c.H; ++h) {
    INFO("head " << h);
    CHECK(merged.max[h] == whole.max[h]);  // the largest score is the same number either way
    CHECK(std::fabs(merged.sum[h] - whole.sum[h]) <= 1e-5f * whole.sum[h]);
    for (int64_t i = 0; i < c.D; ++i)
      CHECK(std::fabs(merged.weighted[h * c.D + i] - whole.weighted[h * c.D + i]) <= 1e-5f * (1.0f + std::fabs(whole.weighted[h * c.D + i])));
  }
  // Merging is order-free: the parts reversed give the same state up to round-off.
  const std::vector<PartialSoftmax> reversed{parts[2], parts[1], parts[0]};
  Tensor a({1, c.H * c.D}), b({1, c.H * c.D});
  normalize(merged, a);
  normalize(merge_partials(reversed), b);
  require_close(a, b);
}

TEST_CASE("split decode: even_split and refused arguments", "[kv][flash-decoding]") {
  CHECK(even_split(10, 3) == std::vector<int64_t>{0, 4, 7, 10});
  CHECK(even_split(2, 4) == std::vector<int64_t>{0, 1, 2, 2, 2});
  CHECK(even_split(8, 1) == std::vector<int64_t>{0, 8});
  CHECK_THROWS_AS(even_split(8, 0), std::invalid_argument);
  const Case c{4, 2, 8, 1, 9};
  const Inputs in = random_inputs(c, 700);
  Tensor out({1, 32});
  CHECK_THROWS_AS(split_decode_attention(in.q, in.k, in.v, 4, 2, std::vector<int64_t>{0}, out), std::invalid_argument);
  CHECK_THROWS_AS(split_decode_attention(in.q, in.k, in.v, 4, 2, std::vector<int64_t>{1, 10}, out), std::invalid_argument);
  CHECK_THROWS_AS(split_decode_attention(in.q, in.k, in.v, 4, 2, std::vector<int64_t>{0, 6, 4, 10}, out), std::invalid_argument);
  CHECK_THROWS_AS(split_decode_attention(in.q, in.k, in.v, 4, 2, std::vector<int64_t>{0, 11}, out), std::invalid_argument);  // 10 keys
  CHECK_THROWS_AS(normalize(merge_partials(std::vector<PartialSoftmax>{partial_softmax(in.q, in.k, in.v, 4, 2, 3, 3)}), out),
                  std::invalid_argument);  // no keys at all
}
