// Table 4 of chapter 08 and its plot: students trained on one token budget with hard labels,
// soft labels at several temperatures and a mix of the two, each judged on the held-out book,
// with the training speed and the price of keeping only the teacher's top k; and the seed table:
// the same runs repeated with other window orders, as mean ± sd, soft target beside soft target.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "distill_loss.hpp"
#include "fake_quant.hpp"
#include "held_out.hpp"
#include "pruning.hpp"
#include "student.hpp"
#include "teacher_labels.hpp"

namespace infer::distill {

struct RunSpec {
  std::string name;  // "hard", "soft T=2", "mix T=2 (hard weight 0.5)"; the soft target is loss.target
  train::LossOptions loss;
};
// hard: one run; soft: one per temperature; mix: one at mix_temperature with hard weight mix_weight;
// each soft and mix run once per soft target in `targets` (the tail bucket, or the top k renormalised).
std::vector<RunSpec> run_specs(std::span<const std::string> labels, std::span<const double> temperatures,
                               double mix_temperature, double mix_weight, std::span<const train::SoftTarget> targets);

// --soft-target's value: "tail", "renormalised", or "both" (the ablation: one run of each).
std::vector<train::SoftTarget> soft_targets(const std::string& flag);
// The temperatures of the soft terms among `specs`, ascending, once each: the label file keeps
// the tail bucket at each of them.
std::vector<double> tail_temperatures(std::span<const RunSpec> specs);

// "top 64 + tail", "top 64 renormalised"; "" for a hard run.
std::string soft_target_name(const train::LossOptions& loss, int k);

struct TrainSettings {
  int batch = 2;          // windows per step
  double lr = 2e-4;       // peak of warm-up + cosine
  double clip = 1.0;      // gradient-norm clipping
  std::vector<uint64_t> seeds = {0};  // the orders of the windows: every run once per seed
};

// Floating-point operations of one training token of `student` on windows of S: the linear
// layers 6 per weight (forward 2, backward 4: ∂x and ∂W), attention 3 × its forward over the
// (S+1)/2 keys a token sees on average, the tied head 4 per weight (forward, ∂x; E is frozen).
double training_flops_per_token(const LlamaConfig& student, int S);

// KL(p_T ‖ q_T) over a sample: with the teacher's full distribution, and as the loss sees it (the
// top k and the tail bucket, or the top k renormalised). Mean per position, nats. With the tail the
// loss's KL is a lower bound of the full one (merging tokens into one bucket can only hide
// divergence); renormalised, it is no bound at all.
struct KlGap {
  double full = 0, seen = 0;
  int64_t positions = 0;
};

struct TrainedRun {
  int depth = 0;
  uint64_t seed = 0;  // the window order
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

// The steps of one pass over the teacher file's windows, `settings.batch` windows a step.
int steps_per_pass(const train::TeacherLabels& labels, const TrainSettings& settings);

// Trains `student` in place for `steps` clipped AdamW steps from a fresh optimizer, warm-up +
// cosine over those steps: each step settings.batch windows of the teacher file in the order drawn
// from `seed` (fewer at the end of a pass; past one pass, the same order again), with a progress
// bar and live loss on stderr named by `label`. fake_quant: the weights the passes see
// (train_step.hpp); nullptr: the student's own. Appends to run's tokens_seen and loss, adds to its
// tokens and seconds.
void train_steps(train::Student<float>& student, const train::TeacherLabels& labels, const train::LossOptions& loss,
                 const TrainSettings& settings, uint64_t seed, int steps, const std::string& label, TrainedRun& run,
                 train::FakeQuant* fake_quant = nullptr);

// Trains one student per (depth, seed, spec) from its pruned start on the teacher file's windows,
// every spec of a seed in that seed's order, with a progress bar and live loss on stderr; scores
// each on the held-out text. Keeps the student of the run with the best agreement for each depth.
std::vector<TrainedRun> train_students(LoadedModel& teacher, std::span<const PrunedStudent> pruned,
                                       const train::TeacherLabels& labels, std::span<const RunSpec> specs,
                                       const TrainSettings& settings, const HeldOut& held_out);

void print_training_table(std::span<const TrainedRun> runs, std::span<const PrunedStudent> pruned, const HeldOut& held_out,
                          const train::TeacherLabels& labels, const CommonOptions& options, nlohmann::json& figures);

// Each run's loss (÷ its first value) against the training tokens seen, one line per run.
void write_loss_plot(std::span<const TrainedRun> runs, const std::string& path);

// One run as the seed table needs it: from this process's runs, or from the training_runs of a
// chapter 08 run record (--json), so that seeds trained by separate commands meet in one table.
struct RunOutcome {
  int depth = 0;
  uint64_t seed = 0;
  std::string labels;       // the run's name without the soft target
  std::string soft_target;  // soft_target_name(); "" for hard
  double temperature = 1, agreement = 0, perplexity = 0, kl_t1 = 0;
  int64_t tokens = 0, positions = 0;
  std::string group() const { return labels + "|" + soft_target; }
};
std::vector<RunOutcome> outcomes(std::span<const TrainedRun> runs, int k);
// Throws std::runtime_error naming the file when it is not a chapter 08 record with training runs.
std::vector<RunOutcome> outcomes_from_record(const std::string& path);

// --seeds: throws UsageError naming a seed given twice.
void check_distinct_seeds(std::span<const uint64_t> seeds);

// The seed table: per depth and run, mean ± sd (min–max) over the seeds of agreement, perplexity
// and KL at T = 1, and each soft run's agreement minus the hard run's of the same seed. Prints
// nothing and returns false when no run has more than one seed.
bool print_seed_table(std::span<const RunOutcome> runs, const CommonOptions& options, nlohmann::json& figures);
// --seed-table: the seed table of the runs in these chapter 08 run records (--json of earlier
// commands), and a record of it at options.json_path; trains nothing. Throws UsageError when the
// records hold one seed only.
void seed_table_from_records(std::span<const std::string> paths, const CommonOptions& options);

}  // namespace infer::distill
