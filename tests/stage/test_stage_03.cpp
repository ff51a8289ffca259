// Stage 03 against stage 02: the grouped cache (each key/value head stored once) must produce
// the same tokens and logits as chapter 02's cache (each key/value head copied per query head),
// with a cache exactly H / H_kv = 3 times smaller. Plus the pieces of the multi-query experiment:
// pooling key/value heads, and the text evaluation it is measured with.
//
// Tests tagged [text] read data/text/web.txt (CTest runs data/fetch_eval_text.sh first).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "cached_generate.hpp"
#include "eval_text_present.hpp"
#include "eval/evaluation.hpp"
#include "grouped_kv_cache.hpp"
#include "kv_cache.hpp"
#include "multi_query.hpp"
#include "stage_prompts.hpp"
#include "test_support.hpp"

using namespace infer;
using infer::stage::kPrompts;


TEST_CASE("GroupedKvCache generates the same tokens and logits as chapter 02's KvCache", "[stage][stage03][reference]") {
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  constexpr int kTokens = 64;
  // Every logit of every step: top_logits sorted over the whole vocabulary.
  const GenerateOptions options{.n_predict = kTokens, .stop_at_end = false, .top_logits = c.vocab_size};
  for (const std::string& prompt : kPrompts) {
    INFO("prompt: " << prompt);
    const std::vector<int32_t> ids = m->tokenizer.encode(prompt);
    const int64_t capacity = std::ssize(ids) + kTokens;

    KvCache full(c, capacity);
    Sampler greedy02(SamplingParams{});
    const Generation g02 = generate_cached(m->model, m->tokenizer, ids, full, greedy02, options);
    GroupedKvCache grouped(c, capacity);
    Sampler greedy03(SamplingParams{});
    const Generation g03 = generate_cached(m->model, m->tokenizer, ids, grouped, greedy03, options);

    REQUIRE(g02.steps.size() == kTokens);
    REQUIRE(g03.steps.size() == kTokens);
    CHECK(grouped.length() == full.length());
    bool bitwise = true;
    double max_diff = 0, max_abs = 0;
    for (int s = 0; s < kTokens; ++s) {
      INFO("step " << s);
      REQUIRE(g03.steps[s].token == g02.steps[s].token);
      // Both lists hold every logit; compare them id by id.
      std::vector<float> a(static_cast<std::size_t>(c.vocab_size)), b(a.size());
      for (const auto& [id, logit] : g02.steps[s].top) a[id] = logit;
      for (const auto& [id, logit] : g03.steps[s].top) b[id] = logit;
      for (std::size_t i = 0; i < a.size(); ++i) {
        bitwise = bitwise && a[i] == b[i];
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
        max_abs = std::max(max_abs, static_cast<double>(std::fabs(a[i])));
      }
    }
    // The contract: equal within fp32 round-off, here 1e-5 of the largest logit (about 20).
    CHECK(max_diff <= 1e-5 * max_abs);
    // In fact the arithmetic is identical: ops::attention reads the same key/value numbers in the
    // same order whether a head sits once in the grouped layout or is repeated in chapter 02's,
    // so on the CPU backend the logits agree bit for bit.
    CHECK(bitwise);
  }
}

TEST_CASE("GroupedKvCache gives the same logits stored head by head as position by position", "[stage][stage03][reference]") {
  // Table 10's two layouts: [H_kv, capacity, D] (the default) and [capacity, H_kv·D]. A prefill
  // of 300 positions crosses the attention kernel's chunks of 256, then 8 decode steps.
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  std::vector<int32_t> ids;
  while (std::ssize(ids) < 300)
    for (const int32_t id : m->tokenizer.encode(kPrompts[1])) ids.push_back(id);
  ids.resize(300);
  GroupedKvCache by_head(c, 310), by_position(c, 310, Device::cpu(), KvLayout::position_major);
  REQUIRE(by_head.layout() == KvLayout::head_major);
  CHECK(by_head.bytes() == by_position.bytes());
  std::vector<int32_t> next = ids;
  for (int step = 0; step < 9; ++step) {
    INFO("step " << step);
    const std::span<const int32_t> feed = step == 0 ? std::span<const int32_t>(ids) : std::span<const int32_t>(&next.back(), 1);
    const int64_t pos0 = step == 0 ? 0 : std::ssize(next) - 1;
    const std::vector<float> a = m->model.forward(feed, pos0, by_head).to_vector();
    const std::vector<float> b = m->model.forward(feed, pos0, by_position).to_vector();
    REQUIRE(a == b);  // bit for bit: the same numbers at other addresses
    next.push_back(static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin()));
  }
}

TEST_CASE("GroupedKvCache holds exactly H / H_kv times fewer bytes than KvCache", "[stage][stage03][reference]") {
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  REQUIRE(c.n_heads / c.n_kv_heads == 3);  // the default model: 9 query heads, 3 key/value heads
  for (int64_t capacity : {1, 100, 2048}) {
    const KvCache full(c, capacity);
    const GroupedKvCache grouped(c, capacity);
    CHECK(grouped.bytes() * 3 == full.bytes());
    CHECK(grouped.bytes() == static_cast<std::size_t>(capacity) * kv_bytes_per_token(c.n_layers, c.n_kv_heads, c.head_dim, 4));
    CHECK(grouped.max_tokens() == capacity);
    CHECK(grouped.length() == 0);
  }
  GroupedKvCache small(c, 4);
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  CHECK_THROWS_AS(m->model.forward(five, 0, small), std::out_of_range);
  CHECK_THROWS_AS(GroupedKvCache(c, 0), std::invalid_argument);
  CHECK_THROWS_AS(GroupedKvCache(c, c.context_length + 1), std::invalid_argument);
}

TEST_CASE("pool_heads averages blocks of head rows", "[stage][stage03][mqa][reference]") {
  // 3 heads of D = 2 rows over 4 inputs; every head the same block: pooling gives that block back.
  const std::vector<float> head = {1.5f, -2.0f, 0.25f, 3.0f, 7.0f, 0.0f, -1.0f, 0.125f};
  std::vector<float> three;
  for (int i = 0; i < 3; ++i) three.insert(three.end(), head.begin(), head.end());
  const Tensor same = pool_heads(Tensor::from_vector(three, {6, 4}), 3, 1);
  CHECK(same.shape() == Shape{2, 4});
  CHECK(same.to_vector() == head);

  // Different heads: new head j is the mean of old heads j·r … j·r + r − 1.
  std::vector<float> w(4 * 2 * 3);  // 4 heads of D = 2 over 3 inputs, w[row][col] = 10·row + col
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(10 * (i / 3) + i % 3);
  const std::vector<float> two = pool_heads(Tensor::from_vector(w, {8, 3}), 4, 2).to_vector();
  // new head 0 = mean(old heads 0, 1): rows (0, 2) and (1, 3); new head 1: rows (4, 6) and (5, 7)
  const std::vector<float> expected = {10, 11, 12, 20, 21, 22, 50, 51, 52, 60, 61, 62};
  CHECK(two == expected);
  const std::vector<float> one = pool_heads(Tensor::from_vector(w, {8, 3}), 4, 1).to_vector();
  CHECK(one == std::vector<float>{30, 31, 32, 40, 41, 42});

  CHECK_THROWS_AS(pool_heads(Tensor::from_vector(w, {8, 3}), 4, 3), std::invalid_argument);
  CHECK_THROWS_AS(pool_heads(Tensor::from_vector(w, {8, 3}), 3, 1), std::invalid_argument);
}

TEST_CASE("pool_kv_heads builds a multi-query model sharing every other weight", "[stage][stage03][mqa][reference]") {
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  const Llama mqa = pool_kv_heads(m->model, 1);
  CHECK(mqa.config().n_kv_heads == 1);
  CHECK(mqa.config().n_heads == c.n_heads);
  const LayerWeights& a = m->model.weights().layers[0];
  const LayerWeights& b = mqa.weights().layers[0];
  CHECK(b.wk->out_features() == c.head_dim);
  CHECK(b.wv->out_features() == c.head_dim);
  CHECK(b.wk->in_features() == c.d_model);
  // Shared, not copied: the same storage behind every other matrix.
  CHECK(dynamic_cast<const DenseLinear&>(*b.wq).weight().raw() == dynamic_cast<const DenseLinear&>(*a.wq).weight().raw());
  CHECK(dynamic_cast<const DenseLinear&>(*b.w_down).weight().raw() ==
        dynamic_cast<const DenseLinear&>(*a.w_down).weight().raw());
  CHECK(mqa.weights().token_embedding == m->model.weights().token_embedding);
  // Its cache: one head per layer, a third of the original grouped cache.
  CHECK(GroupedKvCache(mqa.config(), 64).bytes() * 3 == GroupedKvCache(c, 64).bytes());
  CHECK_THROWS_AS(pool_kv_heads(m->model, 2), std::invalid_argument);

  // Pooling each head with itself (3 → 3) changes nothing: same logits, bit for bit.
  Llama same = pool_kv_heads(m->model, c.n_kv_heads);
  const std::vector<int32_t> ids = m->tokenizer.encode(kPrompts[0]);
  GroupedKvCache c1(c, 32), c2(c, 32);
  CHECK(m->model.forward(ids, 0, c1, true).to_vector() == same.forward(ids, 0, c2, true).to_vector());
}

TEST_CASE("evaluate_text: perplexity and greedy agreement on the held-out text", "[stage][stage03][text]") {
  REQUIRE_MODEL(m);
  if (!eval_text_present()) return;
  const std::string text = held_out_text(read_eval_text());
  CHECK(text.rfind("In the days when the judges judged", 0) == 0);  // Ruth 1:1
  std::vector<int32_t> tokens = m->tokenizer.encode(text, false);
  REQUIRE(tokens.size() >= 2048);  // enough for the chapter's default evaluation
  tokens.resize(300);

  const TextEvaluation e = evaluate_text<GroupedKvCache>(m->model, tokens, {.window = 128, .chunk = 50, .progress_label = ""});
  CHECK(e.windows == 3);           // 128 + 128 + 44
  CHECK(e.count() == 300 - 3);     // each window's first token is context only
  CHECK(e.positions.front() == 1);
  CHECK(std::isfinite(e.perplexity()));
  CHECK(e.perplexity() > 1.0);
  CHECK(e.perplexity() < 100.0);   // English prose for a model that speaks English (about 15)
  CHECK(greedy_agreement(e, e).rate() == 1.0);

  // The chunking inside a window does not matter (beyond round-off).
  const TextEvaluation whole = evaluate_text<GroupedKvCache>(m->model, tokens, {.window = 128, .chunk = 128, .progress_label = ""});
  CHECK(std::fabs(whole.mean_nll() - e.mean_nll()) < 1e-4);
  CHECK(greedy_agreement(e, whole).rate() == 1.0);

  // The NLL of a position is −log softmax(logits)[token]: check one against a direct forward pass.
  GroupedKvCache cache(m->model.config(), 8);
  const std::vector<int32_t> first(tokens.begin(), tokens.begin() + 8);
  const std::vector<float> logits = m->model.forward(first, 0, cache, true).to_vector();
  const auto V = static_cast<std::size_t>(m->model.config().vocab_size);
  double sum = 0;
  for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[2 * V + v]));
  CHECK(e.nll[2] == Approx(std::log(sum) - logits[2 * V + static_cast<std::size_t>(tokens[3])]).epsilon(1e-4));

  const TextEvaluation other = evaluate_text<GroupedKvCache>(m->model, std::span(tokens).first(200), {.window = 128, .chunk = 128, .progress_label = ""});
  CHECK_THROWS_AS(greedy_agreement(e, other), std::invalid_argument);
  CHECK_THROWS_AS(evaluate_text<GroupedKvCache>(m->model, std::span(tokens).first(1)), std::invalid_argument);
}
