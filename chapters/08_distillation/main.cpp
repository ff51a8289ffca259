// ch08_distillation — prune the teacher to a shallower student, then train it on the teacher's
// soft labels; compare with hard labels at the same token budget; use the student as a draft.
//
//   ch08_distillation                              the default run: every table, 2,048 tokens a run (7.5 min, 2 cores)
//   ch08_distillation --tokens 8192                a longer run (about 4× the training time)
//   ch08_distillation --student-layers 20,12       two depths
//   ch08_distillation --labels soft --temperature 2 --no-draft    one run
//   ch08_distillation --labels hard,soft --soft-target both --seeds 1,2,3 --no-draft    hard vs soft, 3 seeds
//   ch08_distillation --seed-table a.json,b.json   the seed table from runs made by separate commands
//   ch08_distillation --labels soft --temperature 1 --no-draft --qat-steps 16    QAT against PTQ in INT4 g128
//   ch08_distillation --labels soft --temperature 1 --no-draft --width-prune     width against depth pruning

#include <cstdio>

#include <fmt/format.h>

#include "app/run_record.hpp"
#include "as_draft.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/table.hpp"  // format_seconds
#include "measure/timing.hpp"
#include "pruning.hpp"
#include "qat.hpp"
#include "soft_labels.hpp"
#include "tensor/ops.hpp"  // num_threads
#include "training_data.hpp"
#include "training_runs.hpp"
#include "width_pruning.hpp"

using namespace infer;
using namespace infer::distill;

namespace {

struct Options {
  std::vector<int> layers = {20};
  std::vector<std::string> labels = {"hard", "soft", "mix"};
  std::vector<double> temperatures = {1, 2, 4};
  std::string soft_target = "tail";
  std::vector<uint64_t> seeds;              // empty: --seed
  std::vector<std::string> seed_table;      // run records to summarise instead of training
  double mix_temperature = 2, mix_weight = 0.5;
  int64_t tokens = 2048, eval_tokens = 512;
  int window = 128, teacher_k = 64, calibration_windows = 8, gamma = 4, repeats = 3, qat_steps = 0;
  TrainSettings train;
  WidthOptions width;  // --width-prune, --width-groups
  std::string out = "ch08_student.gguf", plot = "ch08_loss_curves.svg";
  bool no_draft = false;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 08: distillation — a depth-pruned student trained on the teacher's soft labels"};
  CommonOptions o;
  o.prompt = "The history of the printing press begins in";
  o.n_predict = 32;
  Options opt;
  add_common_options(app, o);
  app.add_option("--student-layers", opt.layers, "student depths to train (comma-separated, each < the teacher's)")
      ->delimiter(',')->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--labels", opt.labels, "runs to train: hard, soft (one per temperature), mix (comma-separated)")
      ->delimiter(',')->check(CLI::IsMember({"hard", "soft", "mix"}))->capture_default_str();
  app.add_option("--temperature", opt.temperatures, "temperatures of the soft runs (comma-separated)")
      ->delimiter(',')->check(real_number(0.05, 100.0))->capture_default_str();
  app.add_option("--mix-temperature", opt.mix_temperature, "temperature of the mix run")->check(CLI::Range(0.05, 100.0))->capture_default_str();
  app.add_option("--mix-weight", opt.mix_weight, "weight of the hard loss in the mix")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--tokens", opt.tokens, "training tokens per run (the equal budget)")->check(CLI::Range(int64_t{2}, int64_t{1} << 24))->capture_default_str();
  app.add_option("--window", opt.window, "tokens per training and evaluation window")->check(CLI::Range(2, 2048))->capture_default_str();
  app.add_option("--batch", opt.train.batch, "windows per training step")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--lr", opt.train.lr, "peak learning rate (warm-up, then cosine)")->check(CLI::Range(1e-7, 1.0))->capture_default_str();
  app.add_option("--teacher-k", opt.teacher_k, "teacher logits kept per position in the label file")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--eval-tokens", opt.eval_tokens, "held-out tokens (Ruth) to evaluate on")->check(CLI::Range(int64_t{2}, int64_t{1} << 20))->capture_default_str();
  app.add_option("--gamma", opt.gamma, "γ of the draft table")->check(CLI::Range(1, 8))->capture_default_str();
  app.add_option("--repeats", opt.repeats, "timed runs per draft configuration")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--out", opt.out, "the trained student as a GGUF file (-L<n> added per depth when several)")->capture_default_str();
  app.add_option("--plot", opt.plot, "SVG plot of the loss curves")->capture_default_str();
  app.add_flag("--no-draft", opt.no_draft, "skip the draft table");
  app.add_option("--qat-steps", opt.qat_steps, "the QAT table: this many more steps of fp32 and of quantization-aware "
                 "fine-tuning of the kept student, each then in INT4 g128")->check(CLI::Range(1, 1 << 20));
  app.add_option("--soft-target", opt.soft_target, "the soft label: the teacher's top k and one bucket for the rest "
                 "(tail), the top k renormalised (renormalised), or a run of each (both: the ablation)")
      ->check(CLI::IsMember({"tail", "renormalised", "both"}))->capture_default_str();
  app.add_option("--seeds", opt.seeds, "train every run once per seed (the order of the windows; comma-separated); "
                 "with two or more, the seed table")->delimiter(',');
  app.add_option("--seed-table", opt.seed_table, "print the seed table from these --json records of earlier runs "
                 "(comma-separated) and train nothing")->delimiter(',');
  add_width_options(app, opt.width);

  return run_main(app, argc, argv, [&] {
    if (!opt.seed_table.empty()) {  // no model, no training: the records' runs, one table
      refuse_flags(app, "--seed-table", {"--model", "--student-layers", "--labels", "--temperature", "--mix-temperature",
                                         "--mix-weight", "--tokens", "--window", "--batch", "--lr", "--teacher-k", "--eval-tokens",
                                         "--gamma", "--repeats", "--out", "--plot", "--no-draft", "--soft-target", "--seeds",
                                         "--seed", "--prompt", "--n-predict", "--qat-steps", "--width-prune"});
      seed_table_from_records(opt.seed_table, o);
      return;
    }
    // Every flag and output path is checked before any work.
    const std::vector<int>& depths = opt.layers;
    if (opt.tokens < opt.window) throw UsageError(fmt::format("--tokens {} is less than one window of {}", opt.tokens, opt.window));
    check_output_path(opt.out, "--out");
    check_output_path(opt.plot, "--plot");
    if (!opt.seeds.empty()) refuse_flags(app, "--seeds", {"--seed"});
    check_distinct_seeds(opt.seeds);
    opt.train.seeds = opt.seeds.empty() ? std::vector<uint64_t>{o.sampling.seed} : opt.seeds;
    const std::vector<RunSpec> specs = run_specs(opt.labels, opt.temperatures, opt.mix_temperature, opt.mix_weight, soft_targets(opt.soft_target));

    LoadedModel m = load_model(o);
    const LlamaConfig& c = m.model.config();
    for (int d : depths)
      if (d >= c.n_layers) throw UsageError(fmt::format("--student-layers {}: the teacher has {} layers", d, c.n_layers));
    check_width_options(opt.width, c, depths);
    if (opt.window > c.context_length) throw UsageError(fmt::format("--window {} exceeds the context {}", opt.window, c.context_length));
    Stopwatch total;
    RunRecord record = new_record("ch08_distillation", o);
    record.figures["threads"] = num_threads();

    const TextSplit text = split_text(m.tokenizer, opt.tokens, opt.window, opt.calibration_windows, opt.eval_tokens);
    fmt::print("Training text: Genesis–Judges, {} tokens; {} windows of {} spread over it per run. Held out: Ruth, {} "
               "tokens evaluated. {} threads.\n\n", text.training_text_tokens, std::ssize(text.training) / opt.window,
               opt.window, text.held_out.size(), num_threads());
    print_soft_label_tables(m, o, opt.teacher_k, record.figures);
    std::fflush(stdout);

    const train::TeacherLabels teacher_labels = cached_teacher_labels(m, o.model_path, text.training, opt.window, opt.teacher_k,
                                                                      tail_temperatures(specs));
    HeldOut held_out{text.held_out, opt.window, {}};
    held_out.teacher = evaluate_text<GroupedKvCache>(m.model, held_out.tokens, {.window = opt.window, .chunk = 128, .progress_label = "teacher"});

    const std::vector<double> scores = print_layer_importance(m, text.calibration, opt.window, depths, o, record.figures);
    const std::vector<PrunedStudent> pruned = print_pruned_students(m, held_out, scores, depths, o, record.figures);
    std::fflush(stdout);

    std::vector<TrainedRun> runs = train_students(m, pruned, teacher_labels, specs, opt.train, held_out);
    print_training_table(runs, pruned, held_out, teacher_labels, o, record.figures);
    print_seed_table(outcomes(runs, opt.teacher_k), o, record.figures);  // with two or more seeds
    if (opt.qat_steps > 0) print_qat_table(runs, teacher_labels, opt.train, held_out, opt.qat_steps, o, record.figures);
    if (opt.width.on)
      print_width_pruning(m, held_out, text.calibration, pruned, runs, teacher_labels, specs, opt.train, opt.width, o, record.figures);
    write_loss_plot(runs, opt.plot);

    std::vector<StudentDraft> drafts = save_students(runs, pruned, opt.out, depths.size() > 1, m.file.metadata(), record.figures);
    if (!opt.no_draft) print_draft_table(m, o, std::move(drafts), opt.gamma, opt.repeats, record.figures);
    fmt::print("whole run: {}\n", format_seconds(total.seconds()));
    record.figures["seconds"] = total.seconds();
    record.write(o.json_path);
  });
}
