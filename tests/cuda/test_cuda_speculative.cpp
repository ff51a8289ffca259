// Chapter 07 on the GPU: the target through lib's CUDA ops, the drafts on the device too (the
// quantized self-draft through chapter 06's CUDA kernels). Greedy speculative decoding must give
// the tokens of plain greedy decoding on the same device, for each draft and γ. (Bit-for-bit
// logits are a CPU guarantee — cuBLAS may sum a 1-row and a 5-row product in different orders —
// so here the check is on tokens, as in the CUDA parity tests of chapters 01–03.)
//
// Needs the default model; without a usable GPU it prints "skipped: no CUDA device (...)" and
// returns 77, which CTest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include "catch_compat.hpp"

#include <filesystem>
#include <memory>

#include "app/cli.hpp"
#include "cached_generate.hpp"
#include "grouped_kv_cache.hpp"
#include "make_drafter.hpp"
#include "skip_without_gpu.hpp"
#include "speculative_decode.hpp"

using namespace infer;

TEST_CASE("greedy speculative decoding on CUDA gives plain greedy decoding's tokens", "[cuda][speculative]") {
  CommonOptions o;
  o.device = "cuda";
  if (!std::filesystem::exists(o.model_path)) {
    WARN("model missing: run data/fetch_model.sh (test skipped)");
    return;
  }
  LoadedModel m = load_model(o);
  constexpr int kTokens = 48, kCapacity = 128;
  for (const char* text : {"The three most important ideas in computer science are", "def fibonacci(n):\n    "}) {
    const std::vector<int32_t> prompt = m.tokenizer.encode(text);
    GroupedKvCache plain_cache(m.model.config(), kCapacity, m.model.device());
    Sampler greedy(SamplingParams{});
    const Generation plain = generate_cached(m.model, m.tokenizer, prompt, plain_cache, greedy,
                                             {.n_predict = kTokens, .stop_at_end = false, .top_logits = 1});
    for (const char* draft : {"q4_1", "layers-8", "lookup", "target"}) {
      std::unique_ptr<Drafter> drafter = spec::make_drafter(draft, m, o, "", kCapacity);
      for (int gamma : {1, 4}) {
        INFO("prompt: " << text << "; draft " << draft << "; γ = " << gamma);
        GroupedKvCache cache(m.model.config(), kCapacity, m.model.device());
        Sampler sampler(SamplingParams{});
        const SpeculativeGeneration spec = generate_speculative(
            m.model, cache, *drafter, m.tokenizer, prompt, sampler,
            {.gamma = gamma, .n_predict = kTokens, .stop_at_end = false, .top_logits = 1});
        REQUIRE(spec.steps.size() == plain.steps.size());
        for (std::size_t s = 0; s < spec.steps.size(); ++s) {
          INFO("step " << s);
          CHECK(spec.steps[s].token == plain.steps[s].token);
        }
        if (std::string(draft) == "target") CHECK(spec.stats.accepted == spec.stats.drafted);
      }
    }
  }
}

int main(int argc, char** argv) { return infer::test::run_cuda_tests_or_skip(argc, argv); }
