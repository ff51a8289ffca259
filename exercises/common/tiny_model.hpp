// A tiny Llama with random weights, for exercise tests that need a forward pass but not the
// trained model: same architecture and code path as the real one (grouped-query attention
// included), small enough that a whole test runs in milliseconds and needs no download.
#pragma once

#include <cstdint>

#include "model/llama.hpp"

namespace exercise {

// 2 layers, d = 64, 4 query heads over 2 key/value heads of dimension 16, MLP 128, 97 tokens,
// context 256. Weights ~ N(0, 1/√in) so activations stay O(1); norms are all ones.
infer::Llama tiny_random_llama(uint64_t seed = 1);

}  // namespace exercise
