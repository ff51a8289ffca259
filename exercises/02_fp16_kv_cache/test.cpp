// Grades exercise 02 (fp16 KV cache) against chapter 03's GroupedKvCache: half the bytes, the
// values really rounded to fp16, and logits within fp16 round-off of the fp32 cache's.
#include <algorithm>
#include <cmath>
#include <iostream>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "app/cli.hpp"
#include "fp16_kv_cache.hpp"
#include "grouped_kv_cache.hpp"  // chapter 03
#include "tensor/ops.hpp"
#include "test_helpers.hpp"
#include "test_support.hpp"
#include "tiny_model.hpp"

namespace {

using exercise::max_abs_diff;
using exercise::spread_tokens;

}  // namespace

TEST_CASE("half the bytes of the fp32 grouped cache", "[exercise]") {
  const infer::Llama model = exercise::tiny_random_llama();
  exercise::Fp16KvCache half(model.config(), 100);
  infer::GroupedKvCache full(model.config(), 100);
  CHECK(half.bytes() * 2 == full.bytes());
}

TEST_CASE("values are stored rounded to fp16", "[exercise]") {
  // One position: each query head's attention is its key/value head's value, as stored.
  const infer::LlamaConfig c = exercise::tiny_random_llama().config();
  exercise::Fp16KvCache cache(c, 4);
  const float not_in_fp16 = 1.0f + 0x1.0p-12f;  // fp16 keeps 10 fraction bits: rounds to 1
  const infer::Tensor q = infer::Tensor::from_vector(std::vector<float>(static_cast<std::size_t>(c.q_width()), 0.5f), {1, c.q_width()});
  const infer::Tensor kv = infer::Tensor::from_vector(std::vector<float>(static_cast<std::size_t>(c.kv_width()), not_in_fp16), {1, c.kv_width()});
  infer::Tensor out({1, c.q_width()});
  cache.attend(0, 0, q, kv, kv, out);
  for (float x : out.to_vector()) REQUIRE(x == 1.0f);
}

TEST_CASE("prefill and decode agree with the fp32 cache within fp16 round-off", "[exercise]") {
  infer::Llama model = exercise::tiny_random_llama();
  const auto prompt = spread_tokens(20, model.config().vocab_size);
  exercise::Fp16KvCache half(model.config(), 32);
  infer::GroupedKvCache full(model.config(), 32);
  // The prompt in two calls: the second must attend over the first call's positions too.
  const std::span<const int32_t> p(prompt);
  model.forward(p.first(12), 0, half);
  model.forward(p.first(12), 0, full);
  CHECK(max_abs_diff(model.forward(p.subspan(12), 12, half), model.forward(p.subspan(12), 12, full)) < 0.02f);
  for (int32_t step = 0; step < 5; ++step) {
    const std::vector<int32_t> next{step * 7 % model.config().vocab_size};
    INFO("decode step " << step);
    CHECK(max_abs_diff(model.forward(next, 20 + step, half), model.forward(next, 20 + step, full)) < 0.02f);
  }
}

TEST_CASE("a position past the end is refused", "[exercise]") {
  infer::Llama model = exercise::tiny_random_llama();
  exercise::Fp16KvCache cache(model.config(), 4);
  const auto prompt = spread_tokens(5, model.config().vocab_size);
  CHECK_THROWS_AS(model.forward(prompt, 0, cache), std::out_of_range);
}

TEST_CASE("figure: fp16 cache on the real model, logit drift and greedy agreement", "[exercise][model]") {
  REQUIRE_MODEL(m);
  const int P = 32, steps = 32;
  const auto prompt = infer::repeated_tokens(m->tokenizer, "Once upon a time, in a small village by the sea, ", P);
  exercise::Fp16KvCache half(m->model.config(), P + steps);
  infer::GroupedKvCache full(m->model.config(), P + steps);
  infer::Tensor a = m->model.forward(prompt, 0, full), b = m->model.forward(prompt, 0, half);
  float worst = 0.0f;
  int agree = 0;
  for (int s = 0; s < steps; ++s) {
    worst = std::max(worst, max_abs_diff(a, b));
    const int32_t next = infer::ops::argmax(a);  // both follow the fp32 cache's greedy path
    agree += next == infer::ops::argmax(b);
    const std::vector<int32_t> ids{next};
    a = m->model.forward(ids, P + s, full);
    b = m->model.forward(ids, P + s, half);
  }
  std::cout << fmt::format("SmolLM2-135M, {} prompt tokens + {} greedy steps:\n"
                           "  cache bytes per position  fp32 {}  fp16 {}\n"
                           "  max |logit fp16 - fp32| = {:.4f}   same greedy token at {}/{} steps\n",
                           P, steps, full.bytes() / static_cast<std::size_t>(P + steps), half.bytes() / static_cast<std::size_t>(P + steps),
                           worst, agree, steps);
  CHECK(agree >= steps * 9 / 10);
}
