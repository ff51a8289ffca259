// Chapter 03's table 9 (chapters/03_gqa/tables/kv_head_sweep.hpp): the variants with other numbers
// of key/value heads — their shapes and cache sizes, the model's own count giving its logits bit for
// bit, repeated heads giving the same outputs — and the cache filled for a decode step.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "catch_compat.hpp"

#include "kv_head_sweep.hpp"
#include "test_support.hpp"

using namespace infer;
using namespace infer::gqa;

TEST_CASE("kv-head variants: repeat_head_rows writes each head's rows r times", "[gqa][kv_heads]") {
  std::vector<float> w(4 * 3);  // 2 heads of D = 2 rows over 3 inputs, w[row][col] = 10·row + col
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(10 * (i / 3) + i % 3);
  const Tensor four = repeat_head_rows(Tensor::from_vector(w, {4, 3}), 2, 2);
  CHECK(four.shape() == Shape{8, 3});
  // new heads 0, 1 = old head 0 (rows 0, 1); new heads 2, 3 = old head 1 (rows 2, 3)
  CHECK(four.to_vector() == std::vector<float>{0, 1, 2, 10, 11, 12, 0, 1, 2, 10, 11, 12,
                                               20, 21, 22, 30, 31, 32, 20, 21, 22, 30, 31, 32});
  CHECK(repeat_head_rows(Tensor::from_vector(w, {4, 3}), 2, 1).to_vector() == w);
  CHECK_THROWS_AS(repeat_head_rows(Tensor::from_vector(w, {4, 3}), 3, 2), std::invalid_argument);
}

TEST_CASE("kv-head variants: the head counts of a shape and their cache bytes", "[gqa][kv_heads]") {
  const LlamaConfig smol = LlamaConfig::from_shape(30, 576, 9, 3, 1536, 49152, 8192);
  CHECK(kv_head_counts(smol) == std::vector<int>{1, 3, 9});
  CHECK(kv_head_counts(LlamaConfig::from_shape(2, 64, 8, 2, 96, 50, 64)) == std::vector<int>{1, 2, 4, 8});
  CHECK(kv_head_counts(LlamaConfig::from_shape(2, 48, 12, 4, 96, 50, 64)) == std::vector<int>{1, 2, 4, 12});  // 3, 6: no
  for (int n : kv_head_counts(smol)) {
    LlamaConfig c = smol;
    c.n_kv_heads = n;
    CHECK(GroupedKvCache(c, 8192).bytes() == 8192ULL * 2 * 30 * n * 64 * 4);
  }
  LlamaConfig mha = smol;
  mha.n_kv_heads = 9;
  CHECK(GroupedKvCache(mha, 8192).bytes() == 1132462080);  // 1.13 GB: twice the fp32 weights
}

TEST_CASE("kv-head variants of the model: 3 heads is the model bit for bit, 9 the same outputs", "[gqa][kv_heads]") {
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  const std::vector<int32_t> ids = m->tokenizer.encode("The three most important ideas in computer science are");
  const auto logits = [&](const Llama& model) {
    GroupedKvCache cache(model.config(), 32);
    return model.forward(ids, 0, cache, /*all_logits=*/true).to_vector();
  };
  const std::vector<float> original = logits(m->model);
  float largest = 0;
  for (float x : original) largest = std::max(largest, std::abs(x));
  for (int n : kv_head_counts(c)) {
    const Llama v = with_kv_heads(m->model, n);
    CHECK(v.config().n_kv_heads == n);
    CHECK(v.weights().layers[0].wk->out_features() == n * c.head_dim);
    CHECK(v.weights().layers[0].wv->out_features() == n * c.head_dim);
    CHECK(dynamic_cast<const DenseLinear&>(*v.weights().layers[0].wq).weight().raw() ==
          dynamic_cast<const DenseLinear&>(*m->model.weights().layers[0].wq).weight().raw());  // shared, not copied
    CHECK(GroupedKvCache(v.config(), 64).bytes() == 64ULL * 2 * c.n_layers * n * c.head_dim * 4);
    const std::vector<float> out = logits(v);
    REQUIRE(out.size() == original.size());
    float diff = 0;
    for (std::size_t i = 0; i < out.size(); ++i) diff = std::max(diff, std::abs(out[i] - original[i]));
    if (n == c.n_kv_heads) CHECK(out == original);  // the same model, bit for bit
    if (n > c.n_kv_heads) CHECK(diff <= 1e-5f * largest);  // each query head reads a copy of its head (on AVX-512: 0)
    if (n < c.n_kv_heads) CHECK(diff > 1e-2f * largest);  // mean-pooled: a different model (table 3)
  }
  CHECK_THROWS_AS(with_kv_heads(m->model, 2), std::invalid_argument);
  CHECK_THROWS_AS(with_kv_heads(m->model, 6), std::invalid_argument);  // 6 does not divide 9 query heads
}

TEST_CASE("kv-head sweep: positions filled in one pass, steps timed at each head count", "[gqa][kv_heads]") {
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  GroupedKvCache cache(c, 16);
  fill_positions(cache, c, 15, Device::cpu());
  CHECK(cache.length() == 15);
  CHECK_THROWS_AS(fill_positions(cache, c, 15, Device::cpu()), std::invalid_argument);  // not empty
  // The next step reads the 15 positions and its own, as after a prefill.
  const int32_t token = 1;
  CHECK(m->model.forward(std::span<const int32_t>(&token, 1), 15, cache).dim(1) == c.vocab_size);
  CHECK(cache.length() == 16);

  const Sweep sweep = time_kv_head_sweep(m->model, {8, 32}, 1);
  REQUIRE(sweep.points.size() == 6);
  for (const SweepPoint& p : sweep.points) {
    CHECK(p.cache_bytes == static_cast<double>(p.context * 2 * c.n_layers * p.kv_heads * c.head_dim * 4));
    CHECK(p.seconds > 0);
  }
  CHECK(sweep.points[1].kv_heads == 3);
  CHECK(sweep.points[1].weight_bytes == static_cast<double>(m->model.weights().bytes_per_token()));
  CHECK(sweep.points[5].context == 32);
  CHECK(sweep.bandwidth.bytes_per_second > 0);
}
