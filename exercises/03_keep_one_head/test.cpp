// Grades exercise 03 (keep one head): the right rows, the right shape, and the same model as
// chapter 03's pooling when every head is the same. The figure compares the two conversions on
// the real model.
#include <iostream>
#include <memory>
#include <numeric>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "eval/evaluation.hpp"  // evaluate_text, greedy_agreement
#include "grouped_kv_cache.hpp"  // chapter 03
#include "keep_head.hpp"
#include "multi_query.hpp"  // chapter 03: pool_heads, pool_kv_heads, share_weights
#include "test_support.hpp"

namespace {

// [rows, in] with element (r, i) = 1000·r + i, so every row says where it came from.
infer::Tensor numbered(int64_t rows, int64_t in) {
  std::vector<float> w(static_cast<std::size_t>(rows * in));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < in; ++i) w[r * in + i] = static_cast<float>(1000 * r + i);
  return infer::Tensor::from_vector(w, {rows, in});
}

// The model with every layer's key/value projections cut to head `keep` (multi-query).
infer::Llama keep_kv_head(const infer::Llama& model, int keep) {
  infer::LlamaConfig config = model.config();
  infer::LlamaWeights w = infer::share_weights(model.weights());
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const auto& src = model.weights().layers[l];
    const auto dense = [](const std::unique_ptr<infer::Linear>& p) { return dynamic_cast<const infer::DenseLinear&>(*p).weight(); };
    w.layers[l].wk = std::make_unique<infer::DenseLinear>(exercise::keep_head(dense(src.wk), config.n_kv_heads, keep));
    w.layers[l].wv = std::make_unique<infer::DenseLinear>(exercise::keep_head(dense(src.wv), config.n_kv_heads, keep));
  }
  config.n_kv_heads = 1;
  return infer::Llama(config, std::move(w), model.device());
}

}  // namespace

TEST_CASE("the kept head is one [D, in] block of rows", "[exercise]") {
  const infer::Tensor w = numbered(3 * 4, 5);  // 3 heads of D = 4
  const infer::Tensor h = exercise::keep_head(w, 3, 0);
  REQUIRE(h.shape() == infer::Shape{4, 5});
  CHECK(h.to_vector()[0] == 0.0f);
}

TEST_CASE("keeping head 1 takes rows D … 2D−1", "[exercise]") {
  const infer::Tensor h = exercise::keep_head(numbered(3 * 4, 5), 3, 1);
  REQUIRE(h.shape() == infer::Shape{4, 5});
  const auto v = h.to_vector();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i < 5; ++i) REQUIRE(v[r * 5 + i] == static_cast<float>(1000 * (4 + r) + i));
}

TEST_CASE("the last head", "[exercise]") {
  const auto v = exercise::keep_head(numbered(3 * 2, 7), 3, 2).to_vector();
  REQUIRE(v.size() == 14);
  CHECK(v.front() == 4000.0f);
  CHECK(v.back() == 5006.0f);
}

TEST_CASE("when every head is the same, keeping one is pooling all", "[exercise]") {
  const infer::Tensor head = numbered(4, 6);
  std::vector<float> three;
  for (int g = 0; g < 3; ++g) {
    const auto h = head.to_vector();
    three.insert(three.end(), h.begin(), h.end());
  }
  const infer::Tensor w = infer::Tensor::from_vector(three, {12, 6});
  CHECK(exercise::keep_head(w, 3, 2).to_vector() == infer::pool_heads(w, 3, 1).to_vector());
}

TEST_CASE("a head that does not exist is refused", "[exercise]") {
  const infer::Tensor w = numbered(6, 2);
  CHECK_THROWS_AS(exercise::keep_head(w, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(exercise::keep_head(w, 3, -1), std::invalid_argument);
  CHECK_THROWS_AS(exercise::keep_head(w, 4, 0), std::invalid_argument);  // 6 rows are not 4 heads
}

TEST_CASE("figure: keep one head or pool, on the real model", "[exercise][model]") {
  REQUIRE_MODEL(m);
  const std::string text =
      "The river rose in the night, and by morning the lower fields were under water. The farmers moved "
      "their animals to the hill behind the church, where the ground was dry, and the children carried "
      "bread and blankets up the path. Nobody in the village could remember a flood like it. The old "
      "miller said that his grandfather had told him of one, long ago, when the bridge was still made of "
      "wood, but even he had never seen the water reach the steps of the inn. By the third day the rain "
      "stopped, the sun came out over the drowned meadows, and the people began to count what they had lost.";
  const auto tokens = m->tokenizer.encode(text);
  const infer::TextEvaluation base = infer::evaluate_text<infer::GroupedKvCache>(m->model, tokens);
  std::cout << fmt::format("{} tokens of text, SmolLM2-135M (3 key/value heads → 1):\n", tokens.size());
  std::cout << fmt::format("  {:<24} perplexity {:>7.2f}\n", "original (GQA, 3 heads)", base.perplexity());
  const auto report = [&](const std::string& name, infer::Llama& model) {
    const infer::TextEvaluation e = infer::evaluate_text<infer::GroupedKvCache>(model, tokens);
    std::cout << fmt::format("  {:<24} perplexity {:>7.2f}   same top-1 as original {:>5.1f}%\n", name, e.perplexity(),
                             100.0 * infer::greedy_agreement(base, e).rate());
    return e.perplexity();
  };
  infer::Llama pooled = infer::pool_kv_heads(m->model, 1);
  report("MQA: mean of the 3", pooled);
  for (int g = 0; g < 3; ++g) {
    infer::Llama kept = keep_kv_head(m->model, g);
    CHECK(report(fmt::format("MQA: keep head {}", g), kept) > base.perplexity());
  }
}
