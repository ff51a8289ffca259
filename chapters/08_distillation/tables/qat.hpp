// The QAT table of chapter 08 (--qat-steps K): the distilled student deployed in INT4 g128,
// quantized after training (PTQ) or trained through the quantization (QAT, variants/fake_quant.hpp), at an
// equal budget of K more training steps:
//
//   student fp32                     the distilled student, as trained
//   PTQ                              that student → INT4 g128
//   fp32 fine-tune, then PTQ         K more steps in fp32, then → INT4 g128 (and its fp32 beside it)
//   QAT                              K steps whose forward sees Ŵ = dequant(quant(W)), then → INT4 g128
//
// each judged on the held-out book (perplexity, agreement with the teacher).
#pragma once

#include <span>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "held_out.hpp"
#include "teacher_labels.hpp"
#include "training_runs.hpp"

namespace infer::distill {

// For each depth's kept student (the run with the best held-out agreement, training_runs.hpp),
// unchanged: the fine-tunes train copies of it with the run's loss and `settings`, on the teacher
// file's windows in a fresh order (the run's seed + 1).
void print_qat_table(std::span<const TrainedRun> runs, const train::TeacherLabels& labels, const TrainSettings& settings,
                     const HeldOut& held_out, int steps, const CommonOptions& options, nlohmann::json& figures);

}  // namespace infer::distill
