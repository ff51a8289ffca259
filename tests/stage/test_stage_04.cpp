// Chapter 04 against chapter 03: batching changes who shares a step, never what a request gets.
//
// Contract: with greedy decoding, every request's tokens under static batching and under
// continuous batching equal its solo run — generate_cached through chapter 03's GroupedKvCache.
//
// The workload is chapter 04's own generator, cut down to 8 requests of at most 24 new tokens
// (prompts of different lengths from its list). The policies are set up so that everything the
// batched step can do happens at least once:
//   - static batches of 3: prompts of different lengths prefilled together (selective batching),
//     finished members stepped on as padding until the batch's longest is done;
//   - continuous with 3 slots: requests admitted mid-run, their prefill in the same forward as
//     the others' one-token decodes; finished requests leaving at once.
// Why equality can hold although the batched step multiplies [B, d] matrices where the solo
// run multiplies vectors: the products are summed in different orders, which moves logits in
// their last bits (chapter 02's stage test measures ~1e-6 relative) but not the argmax unless two
// logits nearly tie; the test reports the first request and step that differ if one ever does.
#include "catch_compat.hpp"
#include <fmt/format.h>

#include "batch_decode.hpp"
#include "cached_generate.hpp"
#include "grouped_kv_cache.hpp"
#include "simulate.hpp"
#include "small_workload.hpp"
#include "test_support.hpp"
#include "workload.hpp"

using namespace infer;
using namespace infer::stage;

namespace {

std::vector<int32_t> solo_tokens(LoadedModel& m, const Request& r) {
  GroupedKvCache cache(m.model.config(), std::ssize(r.prompt) + r.max_new_tokens, m.model.device());
  Sampler greedy({.temperature = 0.0f});
  const GenerateOptions options{.n_predict = r.max_new_tokens, .stop_at_end = false, .top_logits = 1};
  const Generation gen = generate_cached(m.model, m.tokenizer, r.prompt, cache, greedy, options);
  std::vector<int32_t> out;
  for (const StepRecord& s : gen.steps) out.push_back(s.token);
  return out;
}

void require_same(const std::vector<Request>& batched, const std::vector<std::vector<int32_t>>& solo, const std::string& policy) {
  for (std::size_t i = 0; i < batched.size(); ++i) {
    const std::vector<int32_t>& got = batched[i].tokens;
    INFO(policy << ": request " << i << " (" << batched[i].prompt.size() << "-token prompt, " << batched[i].max_new_tokens
                << " new tokens)");
    REQUIRE(got.size() == solo[i].size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      INFO("token " << k + 1);
      REQUIRE(got[k] == solo[i][k]);
    }
  }
}

}  // namespace

TEST_CASE("chapter 04: static and continuous batching give every request its solo chapter-03 tokens", "[stage][reference]") {
  REQUIRE_MODEL(m);
  const std::vector<Request> requests = small_workload(m->tokenizer);
  REQUIRE(std::ssize(requests) == kRequests);

  // Prompts of different lengths share the first static batch (one prefill step, no padding).
  CHECK((requests[0].prompt.size() != requests[1].prompt.size() || requests[1].prompt.size() != requests[2].prompt.size()));

  std::vector<std::vector<int32_t>> solo;
  for (const Request& r : requests) solo.push_back(solo_tokens(*m, r));

  for (Policy policy : {Policy::static_batches, Policy::continuous}) {
    BatchDecoder decoder(m->model, {.temperature = 0.0f});
    VirtualClock clock;  // the model's time is not what this test is about
    const PolicyRun run = serve(policy, requests, kSlots, decoder, clock);
    CHECK(decoder.cache_bytes() == 0);  // every request released its cache
    require_same(run.requests, solo, policy_name(policy));

    // The run did exercise what the contract is about.
    bool mixed_prefill = false;
    int64_t padding = 0;
    for (const StepLog& s : run.steps) {
      mixed_prefill = mixed_prefill || (s.admitted > 0 && s.admitted < s.batch);
      padding += s.batch - s.useful;
    }
    if (policy == Policy::continuous) {
      CHECK(mixed_prefill);  // a prefill chunk beside decode chunks in one forward
      CHECK(padding == 0);
    } else {
      CHECK(padding > 0);    // finished members stepped on
    }
  }
}
