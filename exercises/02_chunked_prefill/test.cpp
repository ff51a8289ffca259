// Grades exercise 02 (chunked prefill): chunks must give the logits of one-shot prefill, and
// leave the cache exactly as one-shot prefill leaves it. Runs on a tiny random model.
#include <cmath>
#include <iostream>
#include <numeric>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "app/cli.hpp"
#include "chunked_prefill.hpp"
#include "kv_cache.hpp"  // chapter 02
#include "measure/timing.hpp"
#include "test_helpers.hpp"
#include "test_support.hpp"
#include "tiny_model.hpp"

namespace {

using exercise::max_abs_diff;
using exercise::spread_tokens;

// Chunked prefill then one decode step, against one-shot prefill then the same step.
void check_chunks(int prompt_len, int chunk) {
  INFO("prompt of " << prompt_len << " tokens in chunks of " << chunk);
  infer::Llama model = exercise::tiny_random_llama();
  const auto prompt = spread_tokens(prompt_len, model.config().vocab_size);
  infer::KvCache one_shot(model.config(), prompt_len + 1), chunked(model.config(), prompt_len + 1);
  const infer::Tensor want = model.forward(prompt, 0, one_shot);
  const infer::Tensor got = exercise::chunked_prefill(model, prompt, chunked, chunk);
  REQUIRE(got.shape() == want.shape());  // [1, V]: the last token only
  CHECK(max_abs_diff(got, want) < 1e-4f);
  CHECK(chunked.length() == prompt_len);
  // The next token sees the whole prompt through the cache: wrong slots or positions show here.
  const std::vector<int32_t> next{5};
  CHECK(max_abs_diff(model.forward(next, prompt_len, chunked), model.forward(next, prompt_len, one_shot)) < 1e-4f);
}

}  // namespace

TEST_CASE("chunks that divide the prompt", "[exercise]") { check_chunks(32, 8); }
TEST_CASE("a shorter last chunk", "[exercise]") { check_chunks(30, 7); }
TEST_CASE("one token per chunk (prefill as decode steps)", "[exercise]") { check_chunks(12, 1); }
TEST_CASE("a chunk longer than the prompt is one-shot prefill", "[exercise]") { check_chunks(10, 64); }

TEST_CASE("a chunk size below 1 is refused", "[exercise]") {
  infer::Llama model = exercise::tiny_random_llama();
  infer::KvCache cache(model.config(), 8);
  const auto prompt = spread_tokens(4, model.config().vocab_size);
  CHECK_THROWS_AS(exercise::chunked_prefill(model, prompt, cache, 0), std::invalid_argument);
}

TEST_CASE("figure: chunked prefill of the real model, logits and time", "[exercise][model]") {
  REQUIRE_MODEL(m);
  const int P = 64;
  const auto prompt = infer::repeated_tokens(m->tokenizer, "The quick brown fox jumps over the lazy dog. ", P);
  infer::KvCache reference(m->model.config(), P);
  const infer::Tensor want = m->model.forward(prompt, 0, reference);
  std::cout << fmt::format("prefill of {} tokens, SmolLM2-135M, 2 threads:\n", P);
  for (int chunk : {64, 16, 4, 1}) {
    infer::KvCache cache(m->model.config(), P);
    infer::Stopwatch watch;
    const infer::Tensor got = exercise::chunked_prefill(m->model, prompt, cache, chunk);
    const double ms = watch.seconds() * 1e3;
    const float diff = max_abs_diff(got, want);
    std::cout << fmt::format("  chunk {:>3}: {:>3} forward calls  {:>7.0f} ms   max |logit - one-shot| = {:.2e}\n", chunk,
                             (P + chunk - 1) / chunk, ms, diff);
    CHECK(diff < 1e-3f);
  }
}
