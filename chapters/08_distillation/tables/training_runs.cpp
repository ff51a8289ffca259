#include "training_runs.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "adamw.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "train_step.hpp"

namespace infer::distill {

std::vector<RunSpec> run_specs(std::span<const std::string> labels, std::span<const double> temperatures,
                               double mix_temperature, double mix_weight) {
  using train::LabelKind;
  std::vector<RunSpec> specs;
  for (const std::string& l : labels) {
    if (l == "hard") specs.push_back({"hard", {LabelKind::hard, 1.0, 1.0}});
    if (l == "soft")
      for (double T : temperatures) specs.push_back({fmt::format("soft T={:g}", T), {LabelKind::soft, T, 0.0}});
    if (l == "mix")
      specs.push_back({fmt::format("mix T={:g} (hard weight {:g})", mix_temperature, mix_weight),
                       {LabelKind::mix, mix_temperature, mix_weight}});
  }
  return specs;
}

double training_flops_per_token(const LlamaConfig& c, int S) {
  const double d = c.d_model, V = c.vocab_size;
  const double block_weights = d * static_cast<double>(c.q_width()) * 2 + d * static_cast<double>(c.kv_width()) * 2 +
                               3.0 * d * c.d_ff;  // wq, wo; wk, wv; gate, up, down
  const double attention_forward = 2.0 * 2.0 * c.n_heads * c.head_dim * (S + 1) / 2.0;  // q·k and p·v, 2 flops per multiply-add
  return c.n_layers * (6.0 * block_weights + 3.0 * attention_forward) + 4.0 * V * d;
}

namespace {

// log Σ exp(x_i / T) over n values
double lse(const float* x, int n, double T) {
  double m = -INFINITY, s = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, x[i] / T);
  for (int i = 0; i < n; ++i) s += std::exp(x[i] / T - m);
  return m + std::log(s);
}

// teacher_logits [n, V] of the sample, student's the same shape.
KlGap kl_gap(const std::vector<float>& teacher_logits, const float* student_logits, int n, int V, int k, double T) {
  KlGap g;
  std::vector<int32_t> ids(V);
  for (int64_t r = 0; r < n; ++r) {
    const float* z = teacher_logits.data() + r * V;
    const float* s = student_logits + r * V;
    const double lz = lse(z, V, T), ls = lse(s, V, T);
    for (int v = 0; v < V; ++v) {  // the full distribution
      const double log_p = z[v] / T - lz;
      g.full += std::exp(log_p) * (log_p - (s[v] / T - ls));
    }
    for (int v = 0; v < V; ++v) ids[v] = v;  // the top k, renormalised
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [z](int32_t a, int32_t b) { return z[a] > z[b]; });
    std::vector<float> top(k);
    for (int i = 0; i < k; ++i) top[i] = z[ids[i]];
    const double lk = lse(top.data(), k, T);
    for (int i = 0; i < k; ++i) {
      const double log_p = top[i] / T - lk;
      g.top_k += std::exp(log_p) * (log_p - (s[ids[i]] / T - ls));
    }
  }
  g.positions = n;
  g.full /= n, g.top_k /= n;
  return g;
}

// One line of live loss on stderr; on a terminal it first clears the progress bar's line.
void live_line(const std::string& text) {
  fmt::print(stderr, "{}{}\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", text);
}

TrainedRun train_one(LoadedModel& m, const PrunedStudent& p, const train::TeacherLabels& labels, const RunSpec& spec,
                     const TrainSettings& t) {
  TrainedRun run;
  run.depth = p.depth, run.spec = spec;
  run.student = std::make_unique<train::Student<float>>(train::Student<float>::from_teacher(m.model, p.keep));
  train::Student<float>& s = *run.student;
  const int B = t.batch, S = labels.window;
  const std::vector<int64_t> order = train::shuffled_order(labels.windows(), t.seed);
  const int steps = static_cast<int>((labels.windows() + B - 1) / B);
  const train::StepOptions options{spec.loss, {.peak = t.lr, .floor_ratio = 0.1, .warmup = std::max(1, steps / 10), .total = steps}, t.clip};
  train::AdamW optimizer;
  run.flops_per_token = training_flops_per_token(s.config(), S);
  const std::string label = fmt::format("{} layers, {}", p.depth, spec.name);
  live_line(fmt::format("training {}: {} steps of {} windows × {} tokens", label, steps, B, S));
  ProgressBar bar(label, labels.size());
  const int every = std::max(1, steps / 8);
  Stopwatch clock;
  for (int step = 0; step < steps; ++step) {
    const int64_t first = int64_t{step} * B;  // this step's windows: order[first, first + B), fewer at the end
    const std::span<const int64_t> windows(order.data() + first, std::min<int64_t>(std::ssize(order) - first, B));
    const train::Batch batch = train::make_batch(labels, windows);
    const train::StepResult r = train::train_step(s, optimizer, batch, options, step);
    run.tokens_seen.push_back(static_cast<double>(run.tokens));  // the loss is measured before the step's update
    run.loss.push_back(r.loss);
    run.tokens += std::ssize(batch.tokens);
    bar.advance(std::ssize(batch.tokens));
    if ((step + 1) % every == 0 || step + 1 == steps)
      live_line(fmt::format("  step {:>4}/{}  loss {:.4f}  |grad| {:.3f}  lr {:.2e}  {:.0f} tokens/s", step + 1, steps,
                            r.loss, r.grad_norm, r.lr, static_cast<double>(run.tokens) / clock.seconds()));
  }
  run.seconds = clock.seconds();
  bar.done();
  s.grads = {};  // 4 bytes a parameter the trained student no longer needs
  return run;
}

}  // namespace

std::vector<TrainedRun> train_students(LoadedModel& m, std::span<const PrunedStudent> pruned,
                                       const train::TeacherLabels& labels, std::span<const RunSpec> specs,
                                       const TrainSettings& t, const HeldOut& h) {
  // The KL sample: the first window of the held-out text, the teacher's full logits once.
  const int n = std::min(h.window, static_cast<int>(h.tokens.size()));
  const std::span<const int32_t> sample(h.tokens.data(), n);
  GroupedKvCache cache(m.model.config(), n, m.model.device());
  const std::vector<float> teacher_logits = m.model.forward(sample, 0, cache, /*all_logits=*/true).to(Device::cpu()).to_vector();
  const int V = m.model.config().vocab_size;

  std::vector<TrainedRun> runs;
  for (const PrunedStudent& p : pruned) {
    std::size_t best = runs.size();
    for (const RunSpec& spec : specs) {
      TrainedRun run = train_one(m, p, labels, spec, t);
      {
        Llama trained = train::to_llama(*run.student);
        run.after = score_on(trained, h, "held-out evaluation");
      }
      const float* student_logits = run.student->forward(sample, 1, n);
      run.gap = kl_gap(teacher_logits, student_logits, n, V, labels.k, spec.loss.temperature);
      run.kl_t1 = kl_gap(teacher_logits, student_logits, n, V, labels.k, 1.0).full;
      fmt::print(stderr, "  → held-out perplexity {:.2f}, agreement with the teacher {:.1f}%\n", run.after.perplexity,
                 100 * run.after.agreement.rate());
      runs.push_back(std::move(run));
      if (best == runs.size() - 1) continue;  // the first run of this depth is the best so far
      TrainedRun& incumbent = runs[best];
      TrainedRun& latest = runs.back();
      if (latest.after.agreement.rate() > incumbent.after.agreement.rate()) {
        incumbent.student.reset();
        best = runs.size() - 1;
      } else {
        latest.student.reset();
      }
    }
  }
  return runs;
}

void print_training_table(std::span<const TrainedRun> runs, std::span<const PrunedStudent> pruned, const HeldOut& h,
                          const train::TeacherLabels& labels, const CommonOptions& o, nlohmann::json& figures) {
  if (runs.empty()) return;
  Table t(fmt::format("Training at an equal budget: {} tokens each ({} windows of {}, the same seeded order), then the "
                      "held-out text ({} tokens)", runs[0].tokens, labels.windows(), labels.window, h.tokens.size()),
          {"layers", "labels", "last loss", "perplexity", "agreement with the teacher", "vs before training",
           "top-1 = next token", "tokens/s", "GFLOP/s", "KL at T=1", "KL at the run's T: full", "top-k only",
           "top-k − full", "student kept"});
  auto before = [&](int depth) {
    for (const PrunedStudent& p : pruned)
      if (p.depth == depth) return p.before;
    return Score{};
  };
  for (const PrunedStudent& p : pruned)
    t.add_row({std::to_string(p.depth), "— (pruned, untrained)", "", fmt::format("{:.2f}", p.before.perplexity),
               fmt::format("{:.1f}%", 100 * p.before.agreement.rate()), "", fmt::format("{:.1f}%", 100 * p.before.next_token),
               "", "", "", "", "", "", ""});
  for (const TrainedRun& r : runs) {
    const double agree = r.after.agreement.rate(), was = before(r.depth).agreement.rate();
    t.add_row({std::to_string(r.depth), r.spec.name, fmt::format("{:.4f}", r.loss.back()),
               fmt::format("{:.2f}", r.after.perplexity), fmt::format("{:.1f}%", 100 * agree),
               fmt::format("{:+.1f} pt", 100 * (agree - was)), fmt::format("{:.1f}%", 100 * r.after.next_token),
               fmt::format("{:.1f}", r.tokens_per_second()), fmt::format("{:.1f}", r.tokens_per_second() * r.flops_per_token / 1e9),
               fmt::format("{:.3f}", r.kl_t1), fmt::format("{:.3f}", r.gap.full), fmt::format("{:.3f}", r.gap.top_k),
               fmt::format("{:+.3f}", r.gap.top_k - r.gap.full),
               r.student ? "✓ (best agreement)" : ""});
    figures["training_runs"].push_back(
        {{"layers", r.depth}, {"labels", r.spec.name}, {"temperature", r.spec.loss.temperature}, {"tokens", r.tokens},
         {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second()},
         {"gflops", r.tokens_per_second() * r.flops_per_token / 1e9}, {"last_loss", r.loss.back()},
         {"score", r.after.json()}, {"kl_t1", r.kl_t1}, {"kl_full", r.gap.full}, {"kl_top_k", r.gap.top_k}, {"loss", r.loss}});
  }
  double kept = 0;
  for (int64_t i = 0; i < labels.size(); ++i) kept += labels.kept_mass(i);
  t.add_note(fmt::format("Loss: hard = cross-entropy on the text's next token; soft = T²·KL(teacher_T ‖ student_T) over "
                         "the teacher's top {} (they hold {:.1f}% of its probability at T = 1, mean over the file); "
                         "mix = the weighted sum. Losses of different kinds are not on one scale: compare the held-out "
                         "columns.", labels.k, 100 * kept / static_cast<double>(labels.size())));
  t.add_note(fmt::format("KL(teacher ‖ student) in nats per position on the first {} held-out positions: at T = 1 over "
                         "the full vocabulary (comparable across runs), and at the run's own T (hard: 1) with the "
                         "teacher's full distribution and with only its top {} renormalised, as the loss sees it; the "
                         "difference is what the offline file does not show. GFLOP/s counts {:.0f} MFLOP per training "
                         "token.", runs[0].gap.positions, labels.k, runs[0].flops_per_token / 1e6));
  t.emit(o.csv_path);
}

void write_loss_plot(std::span<const TrainedRun> runs, const std::string& path) {
  if (path.empty() || runs.empty()) return;
  // Hard and soft losses, and soft losses at different T, are on different scales: each curve is
  // divided by its first value, so every run starts at 1 and the plot shows how fast each falls.
  LinePlot plot("Chapter 08: training loss of each student, ÷ its value at the first step", "training tokens seen",
                "loss ÷ first loss");
  for (const TrainedRun& r : runs) {
    std::vector<double> relative;
    for (double l : r.loss) relative.push_back(l / r.loss.front());
    plot.add_series(fmt::format("{} layers, {}", r.depth, r.spec.name), r.tokens_seen, relative);
  }
  plot.write(path);
  fmt::print("loss curves written to {}\n", path);
}

}  // namespace infer::distill
