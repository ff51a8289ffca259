// Table 5 of chapter 08: the trained student as chapter 07's draft, beside the quantized
// self-draft (the teacher's own weights in Q4_1). Measured with chapter 07's tools: α from real
// speculative runs, c from timed guesses, the speed-up from medians of whole generations.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "model/llama.hpp"

namespace infer::distill {

struct StudentDraft {
  std::string name;
  Llama model;
};

void print_draft_table(LoadedModel& teacher, const CommonOptions& options, std::vector<StudentDraft> students, int gamma,
                       int repeats, nlohmann::json& figures);

}  // namespace infer::distill
