// α is the agreement column. Chapter 06 asks, at 144 positions of the fp32 model's greedy answers
// to three prompts, whether a quantized model's top token after the same prefix is the fp32
// model's token (tables/agreement.hpp there). Greedy speculative decoding asks the same question
// of every guess it checks: is the draft's top token, after the accepted prefix — the fp32
// model's own tokens — the fp32 model's token? So a draft's α is chapter 06's agreement, counted
// on the positions that the rounds happen to check. This study measures both on the same
// positions, with chapter 06's code and its confidence intervals.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "drafter.hpp"
#include "measure/table.hpp"
#include "06_quantization/tables/agreement.hpp"

namespace infer::spec {

struct AgreementAlpha {
  std::string draft;                // as the tables name it
  quant::AgreementCount agreement;  // chapter 06's: every position of the answers
  quant::AgreementCount alpha;      // guesses checked (positions) and kept (agreeing)
  bool same_tokens = true;          // the speculative runs gave the fp32 model's answers
};

// Both measures for one draft (`flag` as on the command line; prompt lookup has no model and is
// refused). A quantized format's agreement is chapter 06's: its weights rounded in place
// (quantize_model) and multiplied in fp32; any other model draft's is its own model's. Needs
// the target on the CPU and `drafter` greedy.
AgreementAlpha measure_agreement_alpha(LoadedModel& m, const std::string& flag, Drafter& drafter,
                                       const quant::GreedyReference& reference, int gamma);

// The table of the measured rows; `positions`, `prompts`: the reference's.
Table agreement_alpha_table(std::span<const AgreementAlpha> rows, int gamma, int64_t positions, std::size_t prompts);

}  // namespace infer::spec
