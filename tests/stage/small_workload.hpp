// The cut-down version of chapter 04's workload that the stage tests of chapters 04 and 05 run:
// 8 requests of at most 24 new tokens, all queued at time 0 (admissions then come from free
// slots, or free blocks, alone), served by 3 slots.
#pragma once

#include <vector>

#include "request.hpp"
#include "tokenizer/tokenizer.hpp"
#include "workload.hpp"

namespace infer::stage {

inline constexpr int kRequests = 8;
inline constexpr int kMaxNew = 24;
inline constexpr int kSlots = 3;

inline std::vector<Request> small_workload(const Tokenizer& tokenizer) {
  WorkloadOptions o;
  o.requests = kRequests;
  o.max_tokens = kMaxNew;
  o.mean_gap = 0;
  return make_workload(tokenizer, o);
}

}  // namespace infer::stage
