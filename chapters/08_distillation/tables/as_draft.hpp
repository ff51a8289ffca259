// Table 5 of chapter 08: the trained student as chapter 07's draft, beside the quantized
// self-draft (the teacher's own weights in Q4_1). Measured with chapter 07's tools: α from real
// speculative runs, c from timed guesses, the speed-up from medians of whole generations.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "model/llama.hpp"
#include "pruning.hpp"
#include "training_runs.hpp"

namespace infer::distill {

struct StudentDraft {
  std::string name;
  Llama model;
};

// The kept student of each run in `runs` (TrainedRun::student), written as a GGUF file —
// `out`, or out's name with -L<depth> when `several_depths` — with its headline line, and handed
// over as a draft (each run's student is released). metadata: the teacher file's, which the
// student's file copies (tokenizer, architecture).
std::vector<StudentDraft> save_students(std::vector<TrainedRun>& runs, std::span<const PrunedStudent> pruned,
                                        const std::string& out, bool several_depths, const std::map<std::string, gguf::Value>& metadata,
                                        nlohmann::json& figures);

void print_draft_table(LoadedModel& teacher, const CommonOptions& options, std::vector<StudentDraft> students, int gamma,
                       int repeats, nlohmann::json& figures);

}  // namespace infer::distill
