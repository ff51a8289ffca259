// How every student of chapter 08 is judged: lib's text evaluation on the held-out book, and
// greedy agreement with the teacher at the same positions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/evaluation.hpp"

namespace infer::distill {

struct HeldOut {
  std::vector<int32_t> tokens;
  int window = 128;        // tokens per evaluation window (the training window)
  TextEvaluation teacher;  // the teacher's evaluation: the reference for agreement
};

struct Score {
  double perplexity = 0, mean_nll = 0;
  double next_token = 0;   // top-1 = the text's next token
  Agreement agreement;     // greedy agreement with the teacher
  nlohmann::json json() const;
};

// Evaluates `model` on the held-out tokens; `label` names its progress bar.
Score score_on(Llama& model, const HeldOut& held_out, const std::string& label);
// The teacher scored against itself (agreement 100%) from held_out.teacher.
Score teacher_score(const HeldOut& held_out);

}  // namespace infer::distill
