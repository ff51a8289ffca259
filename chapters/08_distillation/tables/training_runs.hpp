// Table 4 of chapter 08 and its plot: students trained on one token budget with hard labels,
// soft labels at several temperatures and a mix of the two, each judged on the held-out book,
// with the training speed and the price of keeping only the teacher's top k.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "distill_loss.hpp"
#include "held_out.hpp"
#include "pruning.hpp"
#include "student.hpp"
#include "teacher_labels.hpp"

namespace infer::distill {

struct RunSpec {
  std::string name;  // "hard", "soft T=2", "mix T=2"
  train::LossOptions loss;
};
// hard: one run; soft: one per temperature; mix: one at mix_temperature with hard weight mix_weight.
std::vector<RunSpec> run_specs(std::span<const std::string> labels, std::span<const double> temperatures,
                               double mix_temperature, double mix_weight);

struct TrainSettings {
  int batch = 2;          // windows per step
  double lr = 2e-4;       // peak of warm-up + cosine
  double clip = 1.0;      // gradient-norm clipping
  uint64_t seed = 0;      // the order of the windows (the same for every run)
};

// Floating-point operations of one training token of `student` on windows of S: the linear
// layers 6 per weight (forward 2, backward 4: ∂x and ∂W), attention 3 × its forward over the
// (S+1)/2 keys a token sees on average, the tied head 4 per weight (forward, ∂x; E is frozen).
double training_flops_per_token(const LlamaConfig& student, int S);

// KL(p_T ‖ q_T) over a sample: with the teacher's full distribution, and with only its top k
// renormalised (what the loss sees). Mean per position, nats.
struct KlGap {
  double full = 0, top_k = 0;
  int64_t positions = 0;
};

struct TrainedRun {
  int depth = 0;
  RunSpec spec;
  std::vector<double> tokens_seen, loss;  // per step: tokens trained on before it, its loss
  int64_t tokens = 0;                     // training tokens processed
  double seconds = 0, flops_per_token = 0;
  Score after;
  KlGap gap;          // at the run's temperature (hard: T = 1)
  double kl_t1 = 0;   // KL(teacher ‖ student) at T = 1, full vocabulary: comparable across runs
  std::unique_ptr<train::Student<float>> student;  // kept for the best run of each depth only
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0; }
};

// Trains one student per (depth, spec) from its pruned start on the teacher file's windows, all
// in the same seeded order, with a progress bar and live loss on stderr; scores each on the
// held-out text. Keeps the student of the run with the best agreement for each depth.
std::vector<TrainedRun> train_students(LoadedModel& teacher, std::span<const PrunedStudent> pruned,
                                       const train::TeacherLabels& labels, std::span<const RunSpec> specs,
                                       const TrainSettings& settings, const HeldOut& held_out);

void print_training_table(std::span<const TrainedRun> runs, std::span<const PrunedStudent> pruned, const HeldOut& held_out,
                          const train::TeacherLabels& labels, const CommonOptions& options, nlohmann::json& figures);

// Each run's loss (÷ its first value) against the training tokens seen, one line per run.
void write_loss_plot(std::span<const TrainedRun> runs, const std::string& path);

}  // namespace infer::distill
