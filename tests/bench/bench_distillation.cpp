// bench_distillation — chapter 08's performance target (issue: chapter 08). Prints figures and
// whether the target is met; never fails.
//
//   Training throughput of the depth-pruned student (tokens/s, one AdamW step over B windows of
//   S tokens with soft labels), its achieved GFLOP/s, and their share of the machine's sgemm
//   rate measured in the same run on the same threads: target ≥ 40%.
//   Also where a step's time goes: the forward, the loss, the backward, the update.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "app/cli.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "teacher_labels.hpp"
#include "tensor/ops.hpp"
#include "tensor/ops_cpu.hpp"
#include "train_step.hpp"
#include "training_runs.hpp"  // chapter 08's tables: training_flops_per_token

using namespace infer;
using namespace infer::train;

namespace {

// Median GFLOP/s of C[n, m] = A[n, k] · B[m, k]ᵀ on the configured threads (lib's sgemm, as training uses).
double sgemm_gflops(int n, int m, int k, int repeats) {
  std::vector<float> a(static_cast<std::size_t>(n) * k, 0.5f), b(static_cast<std::size_t>(m) * k, 0.25f),
      c(static_cast<std::size_t>(n) * m);
  const double s = median_seconds(repeats, [&] {
    cpu::sgemm(false, true, n, m, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
  });
  return 2.0 * n * m * k / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: chapter 08's training throughput against the machine's sgemm rate"};
  CommonOptions o;
  o.threads = 2;
  int layers = 20, batch = 2, window = 128, steps = 3;
  add_common_options(app, o);
  app.add_option("--student-layers", layers, "student depth (the teacher's first layers)")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--batch", batch, "windows per step")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--window", window, "tokens per window")->check(CLI::Range(2, 2048))->capture_default_str();
  app.add_option("--steps", steps, "timed steps (median reported)")->check(CLI::Range(1, 100))->capture_default_str();
  return run_main(app, argc, argv, [&] {
    LoadedModel m = load_model(o);
    if (layers > m.model.config().n_layers) throw UsageError(fmt::format("--student-layers {}: the teacher has {}", layers, m.model.config().n_layers));
    const std::vector<int32_t> text = repeated_tokens(
        m.tokenizer, "And God said, Let there be light: and there was light. And God saw the light, that it was good. ",
        static_cast<int64_t>(batch) * window);
    const LossOptions loss{LabelKind::soft, 2.0, 0.0, SoftTarget::with_tail};
    const TeacherLabels labels = teacher_pass(m.model, text, window, 64, std::vector<double>{loss.temperature});
    std::vector<int> keep(static_cast<std::size_t>(layers));
    std::iota(keep.begin(), keep.end(), 0);
    Student<float> s = Student<float>::from_teacher(m.model, keep);
    std::vector<int64_t> all(static_cast<std::size_t>(batch));
    std::iota(all.begin(), all.end(), 0);
    const Batch b = make_batch(labels, all, loss);
    const int N = batch * window, V = s.config().vocab_size;
    const StepOptions options{loss, {.peak = 1e-5, .floor_ratio = 1.0, .warmup = 1, .total = 1}, 1.0};
    AdamW optimizer;

    // Whole steps, then the parts of one step (each a median over the same number of repeats).
    int step = 0;
    const double t_step = median_seconds(steps, [&] { train_step(s, optimizer, b, options, step++); });
    std::vector<float> d_logits(static_cast<std::size_t>(N) * static_cast<std::size_t>(V));
    const SoftTargets soft = b.soft();
    const double t_forward = median_seconds(steps, [&] { s.forward(b.tokens, batch, window); });
    const double t_loss = median_seconds(steps, [&] {
      distillation_loss(s.forward(b.tokens, batch, window), N, V, b.labels, &soft, loss, d_logits.data());
    }) - t_forward;
    const double t_backward = median_seconds(steps, [&] { s.zero_grad(); s.backward(d_logits.data()); });
    const double t_update = median_seconds(steps, [&] { optimizer.step(s.params, s.grads, 1e-5); });

    const double flops = distill::training_flops_per_token(s.config(), window);
    const double tokens_per_second = N / t_step, gflops = tokens_per_second * flops / 1e9;
    const int d = s.config().d_model, F = s.config().d_ff;
    const double mlp = sgemm_gflops(N, F, d, 7), head = sgemm_gflops(N, V, d, 3), square = sgemm_gflops(1024, 1024, 1024, 5);
    const double machine = std::max({mlp, head, square});
    const double share = gflops / machine;

    Table t(fmt::format("Training a {}-layer student: {} windows × {} tokens per step, soft labels (top 64 + tail, T = 2), {} threads, "
                        "median of {}", layers, batch, window, num_threads(), steps),
            {"part of a step", "time", "share"});
    for (const auto& [name, secs] : {std::pair{"forward (blocks + logits)", t_forward}, {"loss and its gradient", t_loss},
                                     {"backward", t_backward}, {"AdamW update", t_update}})
      t.add_row({name, format_seconds(secs), fmt::format("{:.0f}%", 100 * secs / t_step)});
    t.add_row({"whole step (includes clipping)", format_seconds(t_step), "100%"});
    t.print();
    Table r("Throughput against the machine's sgemm rate (same threads, same run)", {"figure", "value"});
    r.add_row({"training tokens/s", fmt::format("{:.1f}", tokens_per_second)});
    r.add_row({"FLOP per training token (model)", fmt::format("{:.0f} M", flops / 1e6)});
    r.add_row({"achieved GFLOP/s", fmt::format("{:.1f}", gflops)});
    r.add_row({fmt::format("sgemm [{}, {}] × [{}, {}]ᵀ (an MLP product)", N, d, F, d), fmt::format("{:.1f} GFLOP/s", mlp)});
    r.add_row({fmt::format("sgemm [{}, {}] × [{}, {}]ᵀ (the logits)", N, d, V, d), fmt::format("{:.1f} GFLOP/s", head)});
    r.add_row({"sgemm 1024 × 1024 × 1024", fmt::format("{:.1f} GFLOP/s", square)});
    r.add_row({"share of the best sgemm rate", fmt::format("{:.0f}%", 100 * share)});
    r.add_note(fmt::format("target: ≥ 40% of the machine's sgemm rate — {:.0f}%: {}", 100 * share, share >= 0.4 ? "met" : "NOT met"));
    r.print();
    r.append_csv(o.csv_path);
  });
}
