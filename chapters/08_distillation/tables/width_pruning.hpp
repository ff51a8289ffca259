// The width-pruning study of chapter 08 (--width-prune): instead of removing layers, keep every
// layer and remove in each the least important key/value groups (a key/value head with its query
// heads) and MLP neurons, measured on the same calibration text (variants/width_importance.hpp), at the
// parameter count of the depth-pruned student; then distil both on the same budget.
//
//   the width importance table   per layer: each group's importance, the groups kept, the share of
//                                the neurons' importance the kept ones hold
//   the comparison table         held-out figures of the teacher, the depth-pruned student, the
//                                width-pruned one and two controls (the least important parts
//                                kept, parts kept at random) before training; then the depth and
//                                width students after the same runs (labels, windows, order,
//                                hyper-parameters: train_students), side by side
#pragma once

#include <span>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "held_out.hpp"
#include "pruning.hpp"
#include "teacher_labels.hpp"
#include "training_runs.hpp"

namespace infer::distill {

struct WidthOptions {
  bool on = false;  // --width-prune
  int groups = 0;   // --width-groups: key/value groups each layer keeps; 0: as many as shrink attention like the MLP
};

// --width-prune and --width-groups.
void add_width_options(CLI::App& app, WidthOptions& options);
// After the teacher is loaded, before any work: throws UsageError when --width-groups exceeds the
// teacher's key/value heads or no width matches the parameter count of a depth in `depths`.
void check_width_options(const WidthOptions& options, const LlamaConfig& teacher, std::span<const int> depths);

// Both tables, for each depth-pruned student in `depth_students` (its runs among `depth_runs`):
// the width student of the same parameter count is trained with every spec and seed of `settings`.
void print_width_pruning(LoadedModel& teacher, const HeldOut& held_out, std::span<const int32_t> calibration,
                         std::span<const PrunedStudent> depth_students, std::span<const TrainedRun> depth_runs,
                         const train::TeacherLabels& labels, std::span<const RunSpec> specs,
                         const TrainSettings& settings, const WidthOptions& options, const CommonOptions& common,
                         nlohmann::json& figures);

}  // namespace infer::distill
