// Chapter 07's layer, part 1: the draft — anything that can guess the next few tokens cheaply.
//
// Speculative decoding splits generation between two models. The target is the model whose
// output we want (the fp32 model of chapters 01–03). The draft guesses γ tokens ahead; the
// target then checks all γ guesses in one forward pass (speculative_decode.hpp). A Drafter is
// anything that can guess: a smaller or quantized model with its own cache, the target's own
// first layers, or no model at all (prompt lookup: copy what followed the same words before).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace infer {

// Up to γ guessed tokens, each with the distribution it was drawn from. The acceptance rule
// needs q(x) — how likely the draft thought its own guess was — to stay exact when sampling.
struct Draft {
  std::vector<int32_t> tokens;        // d1 … dγ' (γ' ≤ γ; empty when the drafter has no guess)
  std::vector<std::vector<float>> q;  // q[i]: [V] distribution tokens[i] was drawn from, or an
                                      // empty list for a deterministic guess (q = one-hot)
  float q_of(std::size_t i) const {   // q_i(d_i)
    return q.empty() || q[i].empty() ? 1.0f : q[i][tokens[i]];
  }
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string name() const = 0;
  // Guesses up to `gamma` tokens to follow `context` (the whole sequence so far: prompt and
  // every token generated). Called once per round with the context the target accepted, so a
  // drafter with a cache must roll it back to what `context` still shares with its guesses.
  virtual Draft propose(std::span<const int32_t> context, int gamma) = 0;
};

}  // namespace infer
