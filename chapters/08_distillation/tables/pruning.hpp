// Tables 2 and 3 of chapter 08: which layers the depth-pruned student keeps (block influence on
// calibration text, layer_importance.hpp), and what the cut costs before any training.
#pragma once

#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "held_out.hpp"

namespace infer::distill {

// One score per teacher layer; prints them with the layers each depth keeps.
std::vector<double> print_layer_importance(LoadedModel& teacher, std::span<const int32_t> calibration, int S,
                                           std::span<const int> depths, const CommonOptions& options,
                                           nlohmann::json& figures);

struct PrunedStudent {
  int depth = 0;
  std::vector<int> keep;  // teacher layers, ascending
  Score before;           // held-out, before training
};

// For each depth: the kept layers, and the held-out table of the teacher, the pruned students
// and, beside each, the naive cut that keeps the first layers (chapter 07's layer-skip draft).
std::vector<PrunedStudent> print_pruned_students(LoadedModel& teacher, const HeldOut& held_out,
                                                 std::span<const double> scores, std::span<const int> depths,
                                                 const CommonOptions& options, nlohmann::json& figures);

}  // namespace infer::distill
