// Chapter 02's layer, part 2: generation in two phases.
//
//   prefill:  logits = model(prompt[0 … P-1], pos0 = 0)   one pass over the whole prompt,
//                                                         filling the cache; matrix-matrix work
//   decode:   repeat: logits = model(next, pos0 = T-1)    one token against the cache;
//                                                         matrix-vector work
//
// The first token's wait (time to first token) is the prefill, which grows with the prompt;
// each later token costs one decode step, which hardly depends on how long the sequence is,
// because streaming the weights dominates it. The loop takes any KvStore, so chapter 03 runs
// it unchanged with its grouped cache.
#pragma once

#include <functional>
#include <vector>

#include "model/kv_store.hpp"
#include "01_naive_loop/naive_generate.hpp"  // Generation, GenerateOptions, StepCost

namespace infer {

// Generates after `prompt` with `cache` (empty, with room for prompt + n_predict tokens).
// steps[0] is the prefill step; its time is the time to first token.
Generation generate_cached(Llama& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                           KvStore& cache, Sampler& sampler, const GenerateOptions& options,
                           const std::function<void(const StepRecord&)>& on_token = {});

}  // namespace infer
