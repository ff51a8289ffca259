// The texts of chapter 08's runs, in tokens, and the offline teacher file made from them once.
//
//   training windows   n windows of S tokens spread evenly over Genesis–Judges (training_text):
//                      n = ⌈token budget / S⌉, so a small budget still samples the whole text
//   calibration        the last windows of the training text, for the layer importance score
//   held-out           the first tokens of Ruth (lib's held_out_text)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "teacher_labels.hpp"

namespace infer::distill {

struct TextSplit {
  std::vector<int32_t> training;     // [n·S] the training windows, one after another
  std::vector<int32_t> calibration;  // [c·S]
  std::vector<int32_t> held_out;     // [eval_tokens] (or all of Ruth when shorter)
  int64_t training_text_tokens = 0;  // the whole of Genesis–Judges
};

// Throws UsageError when the budget asks for more windows than the text holds.
TextSplit split_text(const Tokenizer& tokenizer, int64_t budget, int S, int calibration_windows, int64_t eval_tokens);

// The teacher's top-k labels for `tokens` (windows of S), with the tail at each of `temperatures`:
// loaded from data/cache/ when a file for this model, text, k and temperatures is there and reads
// back (checksum, version), made (and stored) otherwise.
train::TeacherLabels cached_teacher_labels(LoadedModel& teacher, const std::string& model_path,
                                           const std::vector<int32_t>& tokens, int S, int k,
                                           const std::vector<double>& temperatures);

}  // namespace infer::distill
