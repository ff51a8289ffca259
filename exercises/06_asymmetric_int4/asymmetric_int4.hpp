// Exercise 06 — asymmetric INT4: a scale and an integer zero point per group.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace exercise {

// w: weights in groups of `group` consecutive values (w.size() a multiple of group). For each
// group, with lo = min(0, min w) and hi = max(0, max w) (the range always contains 0):
//   scale = (hi − lo) / 15                 16 levels, codes 0 … 15
//   zero  = round(−lo / scale)             the code that stands for exactly 0
//   q     = clamp(round(w / scale) + zero, 0, 15)
//   ŵ     = (q − zero) · scale
// Returns ŵ (the round trip). An all-zero group gives zeros. Throws std::invalid_argument for a
// group < 1 or a size that is not a multiple of it.
std::vector<float> asymmetric_int4_round_trip(std::span<const float> w, int64_t group);

}  // namespace exercise
