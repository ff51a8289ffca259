// Chapter 06's study: agreement with the reference model's greedy output.
//
// Let the fp32 model answer a few prompts greedily. Then give a quantized model the same
// prefixes — prompt plus the reference's first i generated tokens — and ask, at every i, whether
// its most likely next token is the reference's token i. All prefixes of a sequence are checked
// by one teacher-forced pass with logits for every position, so the whole measurement costs one
// forward call. Unlike the question battery it needs no correct answers, and it has one
// observation per generated token instead of one per question.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer::quant {

struct GreedyReference {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<int32_t>> continuations;  // the reference model's greedy tokens
  int64_t positions() const;
};

struct AgreementCount {
  int64_t positions = 0, agreeing = 0;
  double rate() const { return positions > 0 ? static_cast<double>(agreeing) / static_cast<double>(positions) : 0; }
};

// The study's positions: the reference model's greedy answers, under the chat template, to three
// prompts (a story, an explanation, a description): 3 × 48 = 144 positions at 48 tokens each,
// when no answer ends early (the default model's do not). Chapter 07 measures its drafts' α on
// the same positions.
GreedyReference greedy_reference(Llama& model, const Tokenizer& tokenizer, int tokens_per_prompt);

// At each generated position, does `model` choose the reference's token given the same prefix?
AgreementCount greedy_agreement_with(Llama& model, const GreedyReference& reference);

}  // namespace infer::quant
