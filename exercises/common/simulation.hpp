// What the chapter 04 exercises simulate with: requests made by hand, and the step-cost model of
// the batch sweep printed in chapters/04_batching/README.md (SmolLM2-135M, 2 threads, B one-token
// rows → median step ms). Beyond 64 tokens the model extends its last segment (≈ 5.1 ms a token).
#pragma once

#include "request.hpp"   // chapter 04
#include "simulate.hpp"  // chapter 04: StepCostModel

namespace exercise {

inline infer::StepCostModel sweep_cost_model() {
  return infer::StepCostModel({1, 2, 4, 8, 16, 32, 64}, {0.0397, 0.1066, 0.1323, 0.1414, 0.1598, 0.2487, 0.4129});
}

// A request with a prompt of `prompt_tokens` (all token 1: only the count matters to a simulation).
inline infer::Request make_request(int id, int prompt_tokens, int new_tokens, double arrival = 0) {
  infer::Request r;
  r.id = id;
  r.prompt.assign(prompt_tokens, 1);
  r.max_new_tokens = new_tokens;
  r.arrival = arrival;
  return r;
}

}  // namespace exercise
