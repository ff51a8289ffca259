// Tables 2 and 3 of chapter 08: which layers the depth-pruned student keeps (block influence on
// calibration text, layer_importance.hpp), and what the cut costs before any training.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "held_out.hpp"
#include "student.hpp"
#include "width_importance.hpp"

namespace infer::distill {

// One score per teacher layer; prints them with the layers each depth keeps.
std::vector<double> print_layer_importance(LoadedModel& teacher, std::span<const int32_t> calibration, int S,
                                           std::span<const int> depths, const CommonOptions& options,
                                           nlohmann::json& figures);

struct PrunedStudent {
  int depth = 0;
  std::vector<int> keep;  // teacher layers, ascending
  Score before;           // held-out, before training
  std::shared_ptr<const train::WidthCut> width;  // set: width-pruned (every layer, narrower; width_pruning.hpp)
  std::string name;                              // names its training runs; empty: "<depth> layers"
};
// The student a run starts from: the kept layers of the teacher, or its width cut.
train::Student<float> pruned_start(const Llama& teacher, const PrunedStudent& pruned);

// For each depth: the kept layers, and the held-out table of the teacher, the pruned students
// and, beside each, the naive cut that keeps the first layers (chapter 07's layer-skip draft).
std::vector<PrunedStudent> print_pruned_students(LoadedModel& teacher, const HeldOut& held_out,
                                                 std::span<const double> scores, std::span<const int> depths,
                                                 const CommonOptions& options, nlohmann::json& figures);

}  // namespace infer::distill
