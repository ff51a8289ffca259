// Chapter 03's studies (chapters/03_gqa/tables/): the cache bytes of the published shapes
// against values worked out by hand from their configurations, and the sliding-window cache
// against attention over an explicit window of a full cache, on small random tensors.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"

#include "cache_shapes.hpp"
#include "grouped_kv_cache.hpp"  // kv_bytes_per_token
#include "sliding_window_cache.hpp"
#include "tensor/ops.hpp"
#include "tiny_shapes.hpp"

using namespace infer;
using namespace infer::gqa;

namespace {

const CacheShape& shape(const std::string& model) {
  static const std::vector<CacheShape> shapes = published_cache_shapes();
  for (const CacheShape& s : shapes)
    if (s.model == model) return s;
  FAIL("no shape " << model);
  return shapes.front();
}

}  // namespace

TEST_CASE("cache shapes: bytes per token of the published shapes, by hand", "[gqa][shapes]") {
  // 2 (K and V) × layers × kv heads × D × 2 B
  CHECK(shape("Llama-2-7B").bytes_per_token() == 2 * 32 * 32 * 128 * 2);  // 524 288 = 512 KiB
  CHECK(shape("Llama-3-8B").bytes_per_token() == 131072);                  // 2·32·8·128·2 = 128 KiB
  CHECK(shape("Falcon-7B").bytes_per_token() == 8192);                     // 2·32·1·64·2 = 8 KiB
  // MLA: one 512 + 64 vector per layer, no factor 2: 60 · 576 · 2 = 69 120 B = 67.5 KiB.
  CHECK(shape("DeepSeek-V2").bytes_per_token() == 69120);
  // CLA2 on Llama-3-8B's shape: 16 of the 32 layers keep a cache.
  CHECK(shape("Llama-3-8B shape + CLA2").bytes_per_token() == 65536);
  // The GQA rows are chapter 03's formula.
  CHECK(shape("Llama-3-8B").bytes_per_token() == static_cast<int64_t>(kv_bytes_per_token(32, 8, 128, 2)));
}

TEST_CASE("cache shapes: windows cap a layer's positions, global layers keep them all", "[gqa][shapes]") {
  const CacheShape& mistral = shape("Mistral-7B v0.1");
  CHECK(mistral.bytes_at(1000) == 1000LL * 131072);
  CHECK(mistral.bytes_at(4096) == 536870912);  // 4096 positions × 128 KiB = 512 MiB
  CHECK(mistral.bytes_at(131072) == 536870912);
  // Gemma 3 27B: 52 local layers over 1024 positions, 10 global; 2·16·128·2 = 8192 B per layer and token.
  const CacheShape& gemma = shape("Gemma-3-27B");
  CHECK(gemma.bytes_per_token() == 62 * 8192);
  CHECK(gemma.bytes_at(131072) == 52LL * 8192 * 1024 + 10LL * 8192 * 131072);  // 11 173 625 856
  CHECK(gemma.bytes_at(512) == 62LL * 8192 * 512);
  CHECK(global_layers(62, 6) == 10);
  CHECK(global_layers(30, 6) == 5);
  CHECK(cross_layer_caching_layers(30, 4) == 8);  // 7 groups of 4 and one of 2
  CHECK(cross_layer_caching_layers(32, 2) == 16);
  CHECK(cross_layer_caching_layers(30, 1) == 30);
  CHECK_THROWS_AS(cross_layer_caching_layers(30, 0), std::invalid_argument);

  const LlamaConfig smol = LlamaConfig::from_shape(30, 576, 9, 3, 1536, 49152, 8192);  // SmolLM2-135M: 3 kv heads of 64
  CHECK(own_shape(smol, "x").bytes_at(2048) == 2048LL * 23040);              // 2·30·3·64·2 per token
  CHECK(own_shape(smol, "x", 512).bytes_at(2048) == 512LL * 23040);
  CHECK(own_shape(smol, "x", 512, 6).bytes_at(2048) == 25LL * 768 * 512 + 5LL * 768 * 2048);  // 768 B per layer and token
}

TEST_CASE("SlidingWindowCache: every query attends to exactly the last W positions", "[gqa][sliding]") {
  const LlamaConfig c = test::tiny_attention_config(3);
  constexpr int64_t kTokens = 23, kMaxNew = 4;
  for (int64_t W : {1, 3, 5, 8, 30}) {
    // Layer 1 global (window 0), the others local: a local/global mix.
    SlidingWindowCache cache(c, std::vector<int64_t>{W, 0, W}, kMaxNew, kTokens);
    std::vector<std::vector<float>> all_keys(3), all_values(3);  // the reference keeps every position
    std::mt19937 rng(static_cast<unsigned>(W));
    int64_t pos = 0;
    for (int64_t n : {4, 1, 3, 4, 1, 1, 4, 2, 3}) {
      for (int l = 0; l < c.n_layers; ++l) {
        const Tensor q = test::random_rows(n, c.q_width(), rng), k = test::random_rows(n, c.kv_width(), rng), v = test::random_rows(n, c.kv_width(), rng);
        Tensor out({n, c.q_width()});
        cache.attend(l, pos, q, k, v, out);
        auto& ks = all_keys[l];
        auto& vs = all_values[l];
        for (float x : k.to_vector()) ks.push_back(x);
        for (float x : v.to_vector()) vs.push_back(x);
        const Tensor keys_all = Tensor::from_vector(ks, {pos + n, c.kv_width()});
        const Tensor values_all = Tensor::from_vector(vs, {pos + n, c.kv_width()});
        for (int64_t i = 0; i < n; ++i) {
          const int64_t p = pos + i, lo = l == 1 ? 0 : std::max<int64_t>(0, p - W + 1);
          Tensor expected({1, c.q_width()});
          ops::attention(q.row(i), keys_all.rows(lo, p - lo + 1), values_all.rows(lo, p - lo + 1), c.n_heads, c.n_kv_heads, p - lo, expected);
          INFO("W = " << W << ", layer " << l << ", position " << p);
          CHECK(out.row(i).to_vector() == expected.to_vector());
        }
      }
      pos += n;
    }
    CHECK(cache.slots(0) == W + kMaxNew - 1);
    CHECK(cache.slots(1) == kTokens);
    CHECK(cache.bytes() == static_cast<std::size_t>((2 * (W + kMaxNew - 1) + kTokens) * c.kv_width() * 2 * 4));
  }
}

TEST_CASE("SlidingWindowCache: refuses what it cannot do", "[gqa][sliding]") {
  const LlamaConfig c = test::tiny_attention_config(3);
  std::mt19937 rng(1);
  SlidingWindowCache cache(c, std::vector<int64_t>{4, 0, 4}, 2, 6);
  auto step = [&](int layer, int64_t pos, int64_t n) {
    Tensor out({n, c.q_width()});
    cache.attend(layer, pos, test::random_rows(n, c.q_width(), rng), test::random_rows(n, c.kv_width(), rng), test::random_rows(n, c.kv_width(), rng), out);
  };
  CHECK_THROWS_AS(step(0, 1, 1), std::logic_error);        // not from position 0
  CHECK_THROWS_AS(step(0, 0, 3), std::invalid_argument);   // more new positions than max_new
  for (int64_t pos = 0; pos < 6; pos += 2) step(1, pos, 2);
  CHECK_THROWS_AS(step(1, 6, 1), std::out_of_range);       // a global layer past its capacity
  cache.clear();
  step(0, 0, 2);                                           // cleared: from position 0 again
  CHECK_THROWS_AS(SlidingWindowCache(c, std::vector<int64_t>{4, 4}, 2, 6), std::invalid_argument);  // 2 windows, 3 layers
}
