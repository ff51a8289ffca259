// Chapter 02's studies (chapters/02_kv_cache/tables/): the closed forms of a generation's cost
// against step-by-step sums, and the two caches the chapter argues against — eager attention
// with whole score matrices, and a cache grown by concatenation — against the real ones on
// small random tensors.
#include <cmath>
#include <random>
#include <vector>

#include "catch_compat.hpp"

#include "forward_cost.hpp"
#include "generation_cost.hpp"
#include "kv_cache.hpp"
#include "naive_generate.hpp"
#include "repeat_heads.hpp"
#include "study_caches.hpp"
#include "tensor/ops.hpp"
#include "tiny_shapes.hpp"

using namespace infer;
using namespace infer::kv;

TEST_CASE("repeat_heads writes head h of the output from head h / r of the input", "[kv][ops]") {
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(2 * 3 * 4);
  for (float& v : values) v = normal(rng);
  const Tensor x = Tensor::from_vector(values, {2, 3 * 4});
  Tensor out({2, 9 * 4});
  ops::repeat_heads(x, 3, 3, out);
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (int h = 0; h < 9; ++h)
      for (int i = 0; i < 4; ++i) want.push_back(x.host<float>()[r * 12 + (h / 3) * 4 + i]);
  CHECK(out.to_vector() == want);
  Tensor wrong({2, 8 * 4});
  CHECK_THROWS_AS(ops::repeat_heads(x, 3, 3, wrong), std::invalid_argument);
}

TEST_CASE("generation cost: attention scores of a generation, worked by hand", "[kv][cost]") {
  // P = 2, G = 3. Recompute: passes of 2, 3 and 4 tokens, causal: 3 + 6 + 10 = 19 pairs.
  CHECK(recompute_scores(2, 3) == 19);
  // Cached: the prefill's 3 pairs, then one query over 3 keys, then over 4: 3 + 3 + 4 = 10.
  CHECK(cached_scores(2, 3) == 10);
  // One token generated: both loops make the same single pass over the prompt.
  CHECK(recompute_scores(7, 1) == cached_scores(7, 1));
  CHECK(recompute_scores(7, 1) == 28);
  CHECK(pass_scores(1, 9) == 10);   // one query after 9 cached keys sees 10
  CHECK(pass_scores(4, 0) == 10);   // 1 + 2 + 3 + 4
  CHECK_THROWS_AS(recompute_scores(0, 5), std::invalid_argument);
  CHECK_THROWS_AS(cached_scores(5, 0), std::invalid_argument);
}

TEST_CASE("generation cost: the closed forms equal the step-by-step sums", "[kv][cost]") {
  for (int64_t P : {1, 2, 9, 40, 333})
    for (int64_t G : {1, 2, 17, 256}) {
      int64_t recompute = 0, cached = pass_scores(P, 0);
      for (int64_t t = 0; t < G; ++t) recompute += pass_scores(P + t, 0);
      for (int64_t t = 1; t < G; ++t) cached += pass_scores(1, P + t - 1);
      INFO("P = " << P << ", G = " << G);
      CHECK(recompute_scores(P, G) == recompute);
      CHECK(cached_scores(P, G) == cached);
    }
}

TEST_CASE("generation cost: the leading terms are the tutorial's O(P²G + PG² + G³) and O(P² + PG)", "[kv][cost]") {
  // Large P and G: the exact counts approach P²G/2 + PG²/2 + G³/6 and P²/2 + PG + G²/2.
  for (const auto& [P, G] : {std::pair<int64_t, int64_t>{4000, 4000}, {10000, 500}, {500, 10000}}) {
    const auto r = static_cast<double>(recompute_scores(P, G)), k = static_cast<double>(cached_scores(P, G));
    CHECK(r / recompute_scores_leading(static_cast<double>(P), static_cast<double>(G)) == Approx(1.0).epsilon(1e-3));
    CHECK(k / cached_scores_leading(static_cast<double>(P), static_cast<double>(G)) == Approx(1.0).epsilon(1e-3));
  }
  // The leading terms themselves, at P = 2, G = 6: 2²·6/2 + 2·36/2 + 216/6 = 12 + 36 + 36.
  CHECK(recompute_scores_leading(2, 6) == Approx(84.0));
  CHECK(cached_scores_leading(2, 6) == Approx(2 + 12 + 18.0));
}

TEST_CASE("generation cost: whole-model MACs follow chapter 01's forward_cost, scores included", "[kv][cost]") {
  const LlamaConfig c = test::tiny_attention_config(2);
  // Attention MACs of one pass are 2·H·D·layers per q·k pair.
  const int64_t per_pair = 2LL * c.n_heads * c.head_dim * c.n_layers;
  CHECK(forward_cost(c, 5, 3, 1).attention_macs == per_pair * pass_scores(5, 3));
  for (int64_t P : {1, 6})
    for (int64_t G : {1, 4, 20}) {
      const GenerationMacs g = generation_macs(c, P, G);
      int64_t attention_r = 0, attention_k = 0, rest_r = 0, rest_k = 0;
      for (int64_t t = 0; t < G; ++t) {
        const ForwardCost f = forward_cost(c, P + t, 0, 1);
        attention_r += f.attention_macs;
        rest_r += f.linear_macs + f.output_macs;
      }
      for (int64_t t = 0; t < G; ++t) {
        const ForwardCost f = t == 0 ? forward_cost(c, P, 0, 1) : forward_cost(c, 1, P + t - 1, 1);
        attention_k += f.attention_macs;
        rest_k += f.linear_macs + f.output_macs;
      }
      CHECK(g.recompute == attention_r + rest_r);
      CHECK(g.cached == attention_k + rest_k);
      CHECK(attention_r == per_pair * recompute_scores(P, G));
      CHECK(attention_k == per_pair * cached_scores(P, G));
    }
}

TEST_CASE("EagerAttention: whole score matrices give chapter 01's attention", "[kv][study]") {
  const LlamaConfig c = test::tiny_attention_config(2);
  std::mt19937 rng(3);
  constexpr int64_t n = 11;
  const Tensor q = test::random_rows(n, c.q_width(), rng), k = test::random_rows(n, c.kv_width(), rng), v = test::random_rows(n, c.kv_width(), rng);
  Tensor eager_out({n, c.q_width()}), row_out({n, c.q_width()});
  EagerAttention eager(c);
  eager.attend(0, 0, q, k, v, eager_out);
  NoCache none(c);
  none.attend(0, 0, q, k, v, row_out);
  const std::vector<float> a = eager_out.to_vector(), b = row_out.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-5));
  CHECK(eager.largest_scores_bytes() == int64_t{c.n_heads} * n * n * 4);  // H × n × n floats
  CHECK_THROWS_AS(eager.attend(0, 3, q, k, v, eager_out), std::logic_error);
}

TEST_CASE("ConcatKvCache: the same attention as the preallocated cache, and its copying counted", "[kv][study]") {
  const LlamaConfig c = test::tiny_attention_config(2);
  for (const auto layout : {ConcatKvCache::Layout::kv_heads, ConcatKvCache::Layout::query_heads}) {
    std::mt19937 rng(5);
    ConcatKvCache grown(c, layout);
    KvCache fixed(c, 16);
    // A prefill of 4 positions, then 5 single ones, through both layers.
    const std::vector<int64_t> steps{4, 1, 1, 1, 1, 1};
    int64_t pos = 0;
    for (int64_t n : steps) {
      for (int l = 0; l < c.n_layers; ++l) {
        const Tensor q = test::random_rows(n, c.q_width(), rng), k = test::random_rows(n, c.kv_width(), rng), v = test::random_rows(n, c.kv_width(), rng);
        Tensor a({n, c.q_width()}), b({n, c.q_width()});
        grown.attend(l, pos, q, k, v, a);
        fixed.attend(l, pos, q, k, v, b);
        CHECK(a.to_vector() == b.to_vector());  // the same numbers in the same order: bit for bit
      }
      pos += n;
    }
    const int64_t stored = layout == ConcatKvCache::Layout::kv_heads ? c.n_kv_heads : c.n_heads;
    const int64_t per_position = 2LL * c.n_layers * stored * c.head_dim * 4;  // keys and values, every layer
    CHECK(grown.length() == 9);
    CHECK(grown.bytes() == static_cast<std::size_t>(9 * per_position));
    // Each step copies what the cache held before it: 0, then 4, 5, 6, 7 and 8 positions.
    CHECK(grown.bytes_copied() == (4 + 5 + 6 + 7 + 8) * per_position);
    CHECK(grown.allocations() == 2LL * c.n_layers * std::ssize(steps));
    Tensor out({1, c.q_width()});
    CHECK_THROWS_AS(grown.attend(0, 3, test::random_rows(1, c.q_width(), rng), test::random_rows(1, c.kv_width(), rng),
                                 test::random_rows(1, c.kv_width(), rng), out),
                    std::logic_error);
  }
}
