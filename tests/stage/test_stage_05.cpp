// Chapter 05 against chapter 04: paging the cache changes where keys and values live, never what
// a request gets.
//
// Contract (greedy decoding unless stated):
//   1. the paged attention loop gives chapter 03's GroupedKvCache logits, and the gathered
//      (CUDA-style) path equals the in-place one;
//   2. on chapter 04's workload (cut down as in test_stage_04: 8 requests of at most 24 new
//      tokens) every request's tokens under the PagedScheduler equal chapter 04's continuous
//      batching, for block sizes 4 and 16, with the prefix cache on; every block returns;
//   3. a request whose prompt hits the prefix cache gets the tokens of a cold run;
//   4. in a pool so small that requests are preempted and recomputed, every request's tokens
//      equal its uninterrupted run's;
//   5. samples forked from one prompt (temperature 0.8) share its blocks, copy on write, and
//      each gets the tokens it gets when run alone with the same seed.
// As in chapter 04, sums taken in a different order (a prefill chunk computes keys that decode
// steps computed one at a time) may move logits in their last bits; greedy equality holds
// unless two logits nearly tie, and the test names the request and token if one ever does.
#include "catch_compat.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "batch_decode.hpp"
#include "grouped_kv_cache.hpp"
#include "paged_engine.hpp"
#include "paged_kv_cache.hpp"
#include "paged_scheduler.hpp"
#include "simulate.hpp"
#include "small_workload.hpp"
#include "test_support.hpp"
#include "workload.hpp"

using namespace infer;
using namespace infer::stage;

namespace {

void require_same(const std::vector<Request>& got, const std::vector<Request>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << ": request " << got[i].id << " (" << got[i].prompt.size() << "-token prompt, " << got[i].max_new_tokens
              << " new tokens)");
    REQUIRE(got[i].tokens.size() == want[i].tokens.size());
    for (std::size_t k = 0; k < got[i].tokens.size(); ++k) {
      INFO("token " << k + 1);
      REQUIRE(got[i].tokens[k] == want[i].tokens[k]);
    }
  }
}

PagedEngineOptions options(int block_size, std::size_t budget, bool prefix = true) {
  PagedEngineOptions o;
  o.block_size = block_size;
  o.budget_bytes = budget;
  o.prefix_caching = prefix;
  return o;
}

void require_all_returned(const PagedEngine& engine) {
  CHECK(engine.sequences() == 0);
  CHECK(engine.pool().free_blocks() == engine.pool().num_blocks());
  engine.pool().check_invariants();
}

// Tokens of requests run one at a time to completion on `engine` (no scheduler).
std::vector<int32_t> run_alone(PagedEngine& engine, Request r) {
  engine.admit(r, r.max_new_tokens);
  while (!r.done()) {
    Request* batch[] = {&r};
    r.tokens.push_back(engine.step(batch).front());
  }
  engine.release(r);
  return r.tokens;
}

}  // namespace

TEST_CASE("chapter 05: attention through the block table gives the contiguous cache's logits", "[stage][reference]") {
  REQUIRE_MODEL(m);
  const LlamaConfig& c = m->model.config();
  const std::vector<int32_t> prompt = m->tokenizer.encode("Once upon a time, in a small village at the edge of a forest, there lived");
  std::vector<int32_t> decode{m->tokenizer.encode(" a")};

  GroupedKvCache contiguous(c, 64, m->model.device());
  BlockPool pool(c, 4, 64 * std::size_t{2} * c.n_layers * c.kv_width() * 4);  // 16 blocks of 4
  PagedKvCache in_place(pool, c), gathered(pool, c, nullptr, PagedRead::gather);
  double max_diff = 0, max_gather_diff = 0, max_abs = 0;
  int64_t pos = 0;
  for (const std::vector<int32_t>& chunk : {prompt, decode, decode, decode}) {
    REQUIRE(in_place.reserve(std::ssize(chunk)));
    REQUIRE(gathered.reserve(std::ssize(chunk)));
    const std::vector<float> a = m->model.forward(chunk, pos, contiguous).to_vector();
    const std::vector<float> b = m->model.forward(chunk, pos, in_place).to_vector();
    const std::vector<float> g = m->model.forward(chunk, pos, gathered).to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
      max_gather_diff = std::max(max_gather_diff, static_cast<double>(std::fabs(g[i] - b[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(a[i])));
    }
    pos += std::ssize(chunk);
  }
  CHECK(std::ssize(in_place.table().blocks()) == (pos + 3) / 4);  // several blocks were walked
  INFO("largest logit " << max_abs << ", paged − contiguous " << max_diff << ", gathered − in place " << max_gather_diff);
  // Same statements in the same order: equal to the bit on the CPU (measured: difference 0). The
  // bound leaves room for a compiler that vectorises the two loops differently.
  CHECK(max_diff <= 1e-5 * max_abs);
  CHECK(max_gather_diff <= 1e-5 * max_abs);
}

TEST_CASE("chapter 05: paged continuous batching gives every request chapter 04's tokens", "[stage]") {
  REQUIRE_MODEL(m);
  const std::vector<Request> requests = small_workload(m->tokenizer);
  BatchDecoder decoder(m->model, {.temperature = 0.0f});
  VirtualClock clock04;
  const PolicyRun ch04 = serve(Policy::continuous, requests, kSlots, decoder, clock04);

  for (int block_size : {4, 16}) {
    INFO("block size " << block_size);
    PagedEngine engine(m->model, {.temperature = 0.0f}, options(block_size, std::size_t{64} << 20));
    VirtualClock clock;
    const PagedRun run = serve_paged(requests, kSlots, engine, clock);
    require_same(run.requests, ch04.requests, fmt::format("paged, blocks of {}", block_size));
    CHECK(run.preemptions == 0);  // a pool this size never runs out
    require_all_returned(engine);
  }
}

TEST_CASE("chapter 05: a prefix-cache hit gives the tokens of a cold run", "[stage][reference]") {
  REQUIRE_MODEL(m);
  const std::string system = "You are a careful assistant. Answer in one short sentence, plainly, without lists. ";
  Request a, b, a_again;
  a.id = 0;
  a.prompt = m->tokenizer.encode(system + "What is the capital of France?");
  b.id = 1;
  b.prompt = m->tokenizer.encode(system + "Why is the sky blue?");
  a_again = a;
  a_again.id = 0;  // the same seed too (greedy anyway)
  for (Request* r : {&a, &b, &a_again}) r->max_new_tokens = 12;

  PagedEngine cold(m->model, {.temperature = 0.0f}, options(8, std::size_t{32} << 20, /*prefix=*/false));
  const std::vector<int32_t> a_cold = run_alone(cold, a), b_cold = run_alone(cold, b);
  CHECK(cold.stats().cached_tokens == 0);

  PagedEngine shared(m->model, {.temperature = 0.0f}, options(8, std::size_t{32} << 20));
  CHECK(run_alone(shared, a) == a_cold);
  const int64_t common_blocks = [&] {
    std::size_t n = 0;
    while (n < a.prompt.size() && n < b.prompt.size() && a.prompt[n] == b.prompt[n]) ++n;
    return static_cast<int64_t>(n / 8);
  }();
  REQUIRE(common_blocks >= 2);
  // b's prompt starts with a's system prompt: its full blocks come from a's finished run.
  CHECK(run_alone(shared, b) == b_cold);
  CHECK(shared.stats().cached_tokens == common_blocks * 8);
  // a again: everything but its last prompt token, and past the prompt the blocks of a's answer.
  CHECK(run_alone(shared, a_again) == a_cold);
  CHECK(shared.stats().cached_tokens == common_blocks * 8 + static_cast<int64_t>((a.prompt.size() - 1) / 8) * 8);
  require_all_returned(shared);
}

TEST_CASE("chapter 05: preempted and recomputed requests get their uninterrupted tokens", "[stage]") {
  REQUIRE_MODEL(m);
  const std::vector<Request> requests = small_workload(m->tokenizer);
  PagedEngine roomy(m->model, {.temperature = 0.0f}, options(4, std::size_t{64} << 20));
  VirtualClock clock;
  const PagedRun uninterrupted = serve_paged(requests, 8, roomy, clock);
  CHECK(uninterrupted.preemptions == 0);

  // Room for only a few of the eight at once: the scheduler must preempt.
  std::size_t longest = 0;
  for (const Request& r : requests) longest = std::max(longest, r.prompt.size() + static_cast<std::size_t>(r.max_new_tokens));
  const auto blocks = static_cast<std::size_t>((longest + 3) / 4 + 2);
  PagedEngine tight(m->model, {.temperature = 0.0f}, options(4, blocks * roomy.pool().bytes_per_block()));
  REQUIRE(tight.pool().num_blocks() == static_cast<int>(blocks));
  const PagedRun squeezed = serve_paged(requests, 8, tight, clock);
  INFO(squeezed.preemptions << " preemptions in a pool of " << blocks << " blocks");
  CHECK(squeezed.preemptions > 0);
  require_same(squeezed.requests, uninterrupted.requests, "preempted");
  require_all_returned(tight);
}

TEST_CASE("chapter 05: forked samples share the prompt's blocks and each gets its solo tokens", "[stage][reference]") {
  REQUIRE_MODEL(m);
  const SamplingParams sampling{.temperature = 0.8f, .seed = 1234};
  std::vector<Request> samples(4);
  for (int i = 0; i < 4; ++i) {
    samples[i].id = i;
    samples[i].prompt = m->tokenizer.encode("Write a short poem about the sea, the wind and a lighthouse.");
    samples[i].max_new_tokens = 16;
  }
  const int B = 4;
  REQUIRE((samples[0].prompt.size() - 1) % B != 0);  // the prompt's last block is partly filled: copy-on-write

  PagedEngine forked(m->model, sampling, options(B, std::size_t{32} << 20));
  Request& parent = samples[0];
  forked.admit(parent, parent.max_new_tokens);
  {
    Request* batch[] = {&parent};
    parent.tokens.push_back(forked.step(batch).front());
  }
  const int held_after_prefill = forked.pool().used_blocks();
  for (int i = 1; i < 4; ++i) forked.fork(parent, samples[i]);
  CHECK(forked.pool().used_blocks() == held_after_prefill);  // forks take no memory …
  CHECK(forked.stats().shared_at_fork == 3 * static_cast<int64_t>((parent.prompt.size() - 1 + B - 1) / B));
  std::vector<Request*> batch;
  for (Request& r : samples) batch.push_back(&r);
  while (std::any_of(samples.begin(), samples.end(), [](const Request& r) { return !r.done(); })) {
    std::vector<Request*> running;
    for (Request* r : batch)
      if (!r->done()) running.push_back(r);
    const std::vector<int32_t> next = forked.step(running);
    for (std::size_t i = 0; i < running.size(); ++i) running[i]->tokens.push_back(next[i]);
  }
  CHECK(forked.stats().copies == 3);  // … until each writes into the shared last block
  for (Request& r : samples) forked.release(r);
  require_all_returned(forked);

  // Each sample alone, same seed (the sampler is seeded with seed + id), no sharing.
  PagedEngine alone(m->model, sampling, options(B, std::size_t{32} << 20, /*prefix=*/false));
  bool any_differ = false;
  for (const Request& s : samples) {
    Request fresh = s;
    fresh.tokens.clear();
    INFO("sample " << s.id);
    CHECK(run_alone(alone, fresh) == s.tokens);
    any_differ = any_differ || s.tokens != samples[0].tokens;
  }
  CHECK(any_differ);  // they really are different samples
}
