// Chapter 07's layer, part 4: prompt lookup — a draft with no model at all.
//
// Much of what a model writes repeats what it has already seen: a summary quotes its source,
// an edited program repeats the original's lines, an answer restates the question. Prompt
// lookup finds the last n tokens of the sequence earlier in the sequence (prompt and output so
// far) and guesses that what followed them then follows them now. Its cost is a search through
// a few hundred integers — c ≈ 0 — so every accepted guess is nearly free, and a round with no
// match costs exactly one ordinary decode step.
//
// The guess is deterministic, so q is one-hot on it, and the acceptance rule becomes: keep the
// guess x with probability p(x); on rejection draw from p with x removed (max(0, p − q) is p
// with x's entry zeroed), renormalised. Greedy: keep x exactly when it is the target's argmax.
#pragma once

#include "drafter.hpp"

namespace infer {

class PromptLookupDrafter : public Drafter {
 public:
  // Tries n-grams from max_ngram down to min_ngram tokens; the most recent match wins.
  explicit PromptLookupDrafter(int max_ngram = 3, int min_ngram = 1) : max_ngram_(max_ngram), min_ngram_(min_ngram) {}
  std::string name() const override { return "prompt lookup"; }
  Draft propose(std::span<const int32_t> context, int gamma) override;

 private:
  int max_ngram_, min_ngram_;
};

}  // namespace infer
