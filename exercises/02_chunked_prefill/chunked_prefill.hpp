// Exercise 02 — prefill a prompt in chunks instead of one pass.
#pragma once

#include <cstdint>
#include <span>

#include "model/llama.hpp"

namespace exercise {

// Runs prompt[0 … P−1] through `model` into `cache` (empty, room for at least P positions) in
// consecutive chunks of at most `chunk` tokens, and returns the logits of the prompt's LAST
// token, [1, V]: the same numbers as one pass `model.forward(prompt, 0, cache)`.
// Throws std::invalid_argument when chunk < 1 or the prompt is empty.
infer::Tensor chunked_prefill(infer::Llama& model, std::span<const int32_t> prompt, infer::KvStore& cache, int chunk);

}  // namespace exercise
