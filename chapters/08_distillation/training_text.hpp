// What the student learns from and what it is judged on: two disjoint slices of the course's
// evaluation file (data/fetch_eval_text.sh, Genesis–Ruth of the World English Bible).
//
//   training_text   Genesis–Judges: everything before the line "Ruth"   (~230 k tokens)
//   held_out_text   Ruth (lib/eval): everything after that line         (~3.7 k tokens)
//
// A student that had seen Ruth could score well on it by memory; cutting at the same marker as
// held_out_text keeps every held-out figure of this chapter honest.
#pragma once

#include <string>

namespace infer {

// The text before the held-out book; throws like held_out_text when the marker is missing.
std::string training_text(const std::string& eval_text);

}  // namespace infer
