#include "training_runs.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adamw.hpp"
#include "app/run_record.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "train_step.hpp"

namespace infer::distill {

std::vector<RunSpec> run_specs(std::span<const std::string> labels, std::span<const double> temperatures,
                               double mix_temperature, double mix_weight, std::span<const train::SoftTarget> targets) {
  using train::LabelKind;
  std::vector<RunSpec> specs;
  for (const std::string& l : labels) {
    if (l == "hard") specs.push_back({"hard", {LabelKind::hard, 1.0, 1.0}});
    for (train::SoftTarget target : targets) {  // the ablation: each soft target beside the other
      if (l == "soft")
        for (double T : temperatures) specs.push_back({fmt::format("soft T={:g}", T), {LabelKind::soft, T, 0.0, target}});
      if (l == "mix")
        specs.push_back({fmt::format("mix T={:g} (hard weight {:g})", mix_temperature, mix_weight),
                         {LabelKind::mix, mix_temperature, mix_weight, target}});
    }
  }
  return specs;
}

std::vector<train::SoftTarget> soft_targets(const std::string& flag) {
  using train::SoftTarget;
  if (flag == "both") return {SoftTarget::with_tail, SoftTarget::top_k_renormalised};
  return {flag == "tail" ? SoftTarget::with_tail : SoftTarget::top_k_renormalised};
}

std::vector<double> tail_temperatures(std::span<const RunSpec> specs) {
  std::vector<double> ts;
  for (const RunSpec& s : specs)
    if (s.loss.labels != train::LabelKind::hard && std::find(ts.begin(), ts.end(), s.loss.temperature) == ts.end())
      ts.push_back(s.loss.temperature);
  std::sort(ts.begin(), ts.end());
  return ts;
}

std::string soft_target_name(const train::LossOptions& loss, int k) {
  if (loss.labels == train::LabelKind::hard) return "";
  return loss.target == train::SoftTarget::with_tail ? fmt::format("top {} + tail", k) : fmt::format("top {} renormalised", k);
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

// teacher_logits [n, V] of the sample, student's the same shape. The loss's view is computed
// from the full logits here, independently of distill_loss.cpp: the top k by value, then either
// the rest as one bucket (p_tail against q_tail) or nothing (the k renormalised).
KlGap kl_gap(const std::vector<float>& teacher_logits, const float* student_logits, int n, int V, int k, double T,
             train::SoftTarget target) {
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
    for (int v = 0; v < V; ++v) ids[v] = v;
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [z](int32_t a, int32_t b) { return z[a] > z[b]; });
    std::vector<float> top(k), tail_z, tail_s;
    for (int i = 0; i < k; ++i) top[i] = z[ids[i]];
    for (int i = k; i < V; ++i) tail_z.push_back(z[ids[i]]), tail_s.push_back(s[ids[i]]);
    if (target == train::SoftTarget::with_tail && k < V) {  // k + 1 buckets, both sides exact
      const double log_p_tail = lse(tail_z.data(), V - k, T) - lz, log_q_tail = lse(tail_s.data(), V - k, T) - ls;
      g.seen += std::exp(log_p_tail) * (log_p_tail - log_q_tail);
      for (int i = 0; i < k; ++i) {
        const double log_p = top[i] / T - lz;
        g.seen += std::exp(log_p) * (log_p - (s[ids[i]] / T - ls));
      }
    } else {  // the top k, renormalised
      const double lk = lse(top.data(), k, T);
      for (int i = 0; i < k; ++i) {
        const double log_p = top[i] / T - lk;
        g.seen += std::exp(log_p) * (log_p - (s[ids[i]] / T - ls));
      }
    }
  }
  g.positions = n;
  g.full /= n, g.seen /= n;
  return g;
}

struct Spread {
  double mean = 0, sd = 0, lo = 0, hi = 0;
  int n = 0;
};
// Mean, sample standard deviation (n − 1) and range.
Spread spread(const std::vector<double>& x) {
  Spread s;
  s.n = static_cast<int>(x.size());
  if (x.empty()) return s;
  for (double v : x) s.mean += v;
  s.mean /= s.n;
  for (double v : x) s.sd += (v - s.mean) * (v - s.mean);
  s.sd = s.n > 1 ? std::sqrt(s.sd / (s.n - 1)) : 0.0;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  s.lo = *lo, s.hi = *hi;
  return s;
}

// One line of live loss on stderr; on a terminal it first clears the progress bar's line.
void live_line(const std::string& text) {
  fmt::print(stderr, "{}{}\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", text);
}

TrainedRun train_one(LoadedModel& m, const PrunedStudent& p, const train::TeacherLabels& labels, const RunSpec& spec,
                     const TrainSettings& t, uint64_t seed) {
  TrainedRun run;
  run.depth = p.depth, run.spec = spec, run.seed = seed;
  run.student = std::make_unique<train::Student<float>>(pruned_start(m.model, p));
  run.flops_per_token = training_flops_per_token(run.student->config(), labels.window);
  const std::string target = soft_target_name(spec.loss, labels.k);
  const std::string label = fmt::format("{}, {}{}{}, seed {}", p.name.empty() ? fmt::format("{} layers", p.depth) : p.name,
                                        spec.name, target.empty() ? "" : ", ", target, seed);
  train_steps(*run.student, labels, spec.loss, t, seed, steps_per_pass(labels, t), label, run);
  run.student->grads = {};  // 4 bytes a parameter the trained student no longer needs
  return run;
}

}  // namespace

int steps_per_pass(const train::TeacherLabels& labels, const TrainSettings& t) {
  return static_cast<int>((labels.windows() + t.batch - 1) / t.batch);
}

void train_steps(train::Student<float>& s, const train::TeacherLabels& labels, const train::LossOptions& loss,
                 const TrainSettings& t, uint64_t seed, int steps, const std::string& label, TrainedRun& run,
                 train::FakeQuant* fake_quant) {
  const int B = t.batch, S = labels.window, per_pass = steps_per_pass(labels, t);
  const std::vector<int64_t> order = train::shuffled_order(labels.windows(), seed);
  const train::StepOptions options{.loss = loss,
                                   .schedule = {.peak = t.lr, .floor_ratio = 0.1, .warmup = std::max(1, steps / 10), .total = steps},
                                   .clip_norm = t.clip, .fake_quant = fake_quant};
  train::AdamW optimizer;
  auto windows_of = [&](int step) {  // order[first, first + B), fewer at the end of a pass; then the order again
    const int64_t first = int64_t{step % per_pass} * B;
    return std::span<const int64_t>(order.data() + first, std::min<int64_t>(std::ssize(order) - first, B));
  };
  int64_t total = 0;
  for (int step = 0; step < steps; ++step) total += std::ssize(windows_of(step)) * S;
  live_line(fmt::format("training {}: {} steps of {} windows × {} tokens", label, steps, B, S));
  ProgressBar bar(label, total);
  const int every = std::max(1, steps / 8);
  Stopwatch clock;
  for (int step = 0; step < steps; ++step) {
    const std::span<const int64_t> windows = windows_of(step);
    const train::Batch batch = train::make_batch(labels, windows, loss);
    const train::StepResult r = train::train_step(s, optimizer, batch, options, step);
    run.tokens_seen.push_back(static_cast<double>(run.tokens));  // the loss is measured before the step's update
    run.loss.push_back(r.loss);
    run.tokens += std::ssize(batch.tokens);
    bar.advance(std::ssize(batch.tokens));
    if ((step + 1) % every == 0 || step + 1 == steps)
      live_line(fmt::format("  step {:>4}/{}  loss {:.4f}  |grad| {:.3f}  lr {:.2e}  {:.0f} tokens/s", step + 1, steps,
                            r.loss, r.grad_norm, r.lr, static_cast<double>(run.tokens) / clock.seconds()));
  }
  run.seconds += clock.seconds();
  bar.done();
}

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
    for (uint64_t seed : t.seeds)
    for (const RunSpec& spec : specs) {
      TrainedRun run = train_one(m, p, labels, spec, t, seed);
      {
        Llama trained = train::to_llama(*run.student);
        run.after = score_on(trained, h, "held-out evaluation");
      }
      const float* student_logits = run.student->forward(sample, 1, n);
      run.gap = kl_gap(teacher_logits, student_logits, n, V, labels.k, spec.loss.temperature, spec.loss.target);
      run.kl_t1 = kl_gap(teacher_logits, student_logits, n, V, labels.k, 1.0, spec.loss.target).full;
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
          {"layers", "labels", "soft target", "seed", "last loss", "perplexity", "agreement with the teacher",
           "vs before training", "top-1 = next token", "tokens/s", "GFLOP/s", "KL at T=1", "KL at the run's T: full",
           "as the loss sees it", "seen − full", "student kept"});
  auto before = [&](int depth) {
    for (const PrunedStudent& p : pruned)
      if (p.depth == depth) return p.before;
    return Score{};
  };
  for (const PrunedStudent& p : pruned)
    t.add_row({std::to_string(p.depth), "— (pruned, untrained)", "", "", "", fmt::format("{:.2f}", p.before.perplexity),
               fmt::format("{:.1f}%", 100 * p.before.agreement.rate()), "", fmt::format("{:.1f}%", 100 * p.before.next_token),
               "", "", "", "", "", "", ""});
  for (const TrainedRun& r : runs) {
    const double agree = r.after.agreement.rate(), was = before(r.depth).agreement.rate();
    const std::string target = soft_target_name(r.spec.loss, labels.k);
    t.add_row({std::to_string(r.depth), r.spec.name, target, std::to_string(r.seed), fmt::format("{:.4f}", r.loss.back()),
               fmt::format("{:.2f}", r.after.perplexity), fmt::format("{:.1f}%", 100 * agree),
               fmt::format("{:+.1f} pt", 100 * (agree - was)), fmt::format("{:.1f}%", 100 * r.after.next_token),
               fmt::format("{:.1f}", r.tokens_per_second()), fmt::format("{:.1f}", r.tokens_per_second() * r.flops_per_token / 1e9),
               fmt::format("{:.3f}", r.kl_t1), fmt::format("{:.3f}", r.gap.full), fmt::format("{:.3f}", r.gap.seen),
               fmt::format("{:+.3f}", r.gap.seen - r.gap.full),
               r.student ? "✓ (best agreement)" : ""});
    figures["training_runs"].push_back(
        {{"layers", r.depth}, {"labels", r.spec.name}, {"soft_target", target}, {"seed", r.seed},
         {"temperature", r.spec.loss.temperature}, {"tokens", r.tokens},
         {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second()},
         {"gflops", r.tokens_per_second() * r.flops_per_token / 1e9}, {"last_loss", r.loss.back()},
         {"score", r.after.json()}, {"kl_t1", r.kl_t1}, {"kl_full", r.gap.full}, {"kl_seen", r.gap.seen}, {"loss", r.loss}});
  }
  double kept = 0;
  for (int64_t i = 0; i < labels.size(); ++i) kept += labels.kept_mass(i);
  std::string tails;  // the tail's share of the teacher's mass at each kept T, mean over the file
  for (std::size_t c = 0; c < labels.temperatures.size(); ++c) {
    double tail = 0;
    for (int64_t i = 0; i < labels.size(); ++i) tail += labels.tail_mass(i, static_cast<int>(c));
    tails += fmt::format("{}{:.1f}% at T = {:g}", c ? ", " : "", 100 * tail / static_cast<double>(labels.size()),
                         labels.temperatures[c]);
  }
  t.add_note(fmt::format("Loss: hard = cross-entropy on the text's next token; soft = T²·KL(teacher_T ‖ student_T) over "
                         "the teacher's top {} (they hold {:.1f}% of its probability at T = 1, mean over the file) and, "
                         "as \"top {} + tail\", one bucket for every other token (the tail holds {}); \"renormalised\" "
                         "drops the tail. mix = the weighted sum. Losses of different kinds are not on one scale: compare "
                         "the held-out columns.", labels.k, 100 * kept / static_cast<double>(labels.size()), labels.k,
                         tails.empty() ? "—" : tails));
  t.add_note(fmt::format("KL(teacher ‖ student) in nats per position on the first {} held-out positions: at T = 1 over "
                         "the full vocabulary (comparable across runs), and at the run's own T (hard: 1) with the "
                         "teacher's full distribution and as the loss sees it (its soft target; hard: top {} + tail); "
                         "the difference is what the label does not show. GFLOP/s counts {:.0f} MFLOP per training "
                         "token.", runs[0].gap.positions, labels.k, runs[0].flops_per_token / 1e6));
  t.emit(o.csv_path);
}

void write_loss_plot(std::span<const TrainedRun> runs, const std::string& path) {
  if (path.empty() || runs.empty()) return;
  // Hard and soft losses, and soft losses at different T, are on different scales: each curve is
  // divided by its first value, so every run starts at 1 and the plot shows how fast each falls.
  LinePlot plot("Chapter 08: training loss of each student, ÷ its value at the first step", "training tokens seen",
                "loss ÷ first loss");
  const bool several_seeds = std::any_of(runs.begin(), runs.end(), [&](const TrainedRun& r) { return r.seed != runs[0].seed; });
  for (const TrainedRun& r : runs) {
    std::vector<double> relative;
    for (double l : r.loss) relative.push_back(l / r.loss.front());
    plot.add_series(fmt::format("{} layers, {}{}{}", r.depth, r.spec.name,
                                r.spec.loss.labels == train::LabelKind::hard ? ""
                                : r.spec.loss.target == train::SoftTarget::with_tail ? ", with tail" : ", renormalised",
                                several_seeds ? fmt::format(", seed {}", r.seed) : ""), r.tokens_seen, relative);
  }
  plot.write(path);
  fmt::print("loss curves written to {}\n", path);
}

std::vector<RunOutcome> outcomes(std::span<const TrainedRun> runs, int k) {
  std::vector<RunOutcome> out;
  for (const TrainedRun& r : runs)
    out.push_back({r.depth, r.seed, r.spec.name, soft_target_name(r.spec.loss, k), r.spec.loss.temperature,
                   r.after.agreement.rate(), r.after.perplexity, r.kl_t1, r.tokens, r.after.agreement.positions});
  return out;
}

std::vector<RunOutcome> outcomes_from_record(const std::string& path) {
  const RunRecord record = RunRecord::read(path);
  auto fail = [&](const std::string& what) { return std::runtime_error(fmt::format("{}: {}", path, what)); };
  if (record.binary != "ch08_distillation") throw fail(fmt::format("a record of {}, not of ch08_distillation", record.binary));
  if (!record.figures.contains("training_runs")) throw fail("the record holds no training runs");
  std::vector<RunOutcome> out;
  try {
    for (const nlohmann::json& r : record.figures.at("training_runs")) {
      if (!r.contains("seed")) throw fail("a training run without a seed: a record from before the seed table");
      const nlohmann::json& score = r.at("score");
      out.push_back({r.at("layers").get<int>(), r.at("seed").get<uint64_t>(), r.at("labels").get<std::string>(),
                     r.at("soft_target").get<std::string>(), r.at("temperature").get<double>(),
                     score.at("agreement").get<double>(), score.at("perplexity").get<double>(), r.at("kl_t1").get<double>(),
                     r.at("tokens").get<int64_t>(), score.at("positions").get<int64_t>()});
    }
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("a training run is missing a field ({})", e.what()));
  }
  return out;
}

bool print_seed_table(std::span<const RunOutcome> runs, const CommonOptions& o, nlohmann::json& figures) {
  // The groups: one row per depth and run (labels, soft target), in the order hard, soft by T with
  // its two soft targets side by side, mix; each row gathers that run over every seed.
  std::vector<RunOutcome> sorted(runs.begin(), runs.end());
  std::vector<int> depths;  // in the order they first appear
  for (const RunOutcome& r : sorted)
    if (std::find(depths.begin(), depths.end(), r.depth) == depths.end()) depths.push_back(r.depth);
  auto key = [&](const RunOutcome& r) {
    const auto depth_rank = std::find(depths.begin(), depths.end(), r.depth) - depths.begin();
    const int kind = r.labels == "hard" ? 0 : r.labels.starts_with("soft") ? 1 : 2;
    const bool renormalised = r.soft_target.find("renormalised") != std::string::npos;
    return std::tuple(depth_rank, kind, r.temperature, renormalised, r.labels, r.seed);
  };
  std::sort(sorted.begin(), sorted.end(), [&](const RunOutcome& a, const RunOutcome& b) { return key(a) < key(b); });
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (key(sorted[i]) == key(sorted[i - 1]))
      throw std::runtime_error(fmt::format("the seed table got the run \"{}\" ({} layers, seed {}) twice", sorted[i].labels,
                                           sorted[i].depth, sorted[i].seed));
  std::vector<uint64_t> seeds;
  for (const RunOutcome& r : sorted)
    if (std::find(seeds.begin(), seeds.end(), r.seed) == seeds.end()) seeds.push_back(r.seed);
  if (seeds.size() < 2) return false;
  std::sort(seeds.begin(), seeds.end());
  for (const RunOutcome& r : sorted)
    if (r.tokens != sorted[0].tokens || r.positions != sorted[0].positions)
      throw std::runtime_error(fmt::format("the seed table needs one budget: runs of {} and {} training tokens ({} and {} "
                                           "held-out positions)", sorted[0].tokens, r.tokens, sorted[0].positions, r.positions));
  auto hard_agreement = [&](int depth, uint64_t seed) -> std::optional<double> {
    for (const RunOutcome& r : sorted)
      if (r.depth == depth && r.seed == seed && r.labels == "hard") return r.agreement;
    return std::nullopt;
  };
  Table t(fmt::format("Hard against soft labels over {} seeds ({}): {} training tokens per run, the seed picks the order "
                      "of the same windows; held-out text, {} positions. mean ± sd (min–max)", seeds.size(),
                      fmt::join(seeds, ", "), sorted[0].tokens, sorted[0].positions),
          {"layers", "labels", "soft target", "runs", "agreement with the teacher", "− hard, same seed",
           "seeds above hard", "perplexity", "KL at T=1"});
  auto pct = [](const Spread& s) { return fmt::format("{:.1f} ± {:.1f}% ({:.1f}–{:.1f})", 100 * s.mean, 100 * s.sd, 100 * s.lo, 100 * s.hi); };
  for (std::size_t first = 0; first < sorted.size();) {
    std::size_t last = first;
    while (last < sorted.size() && sorted[last].depth == sorted[first].depth && sorted[last].group() == sorted[first].group()) ++last;
    std::vector<double> agreement, perplexity, kl, minus_hard;
    int above = 0;
    for (std::size_t i = first; i < last; ++i) {
      const RunOutcome& r = sorted[i];
      agreement.push_back(r.agreement), perplexity.push_back(r.perplexity), kl.push_back(r.kl_t1);
      if (const auto hard = hard_agreement(r.depth, r.seed); hard && r.labels != "hard") {
        minus_hard.push_back(r.agreement - *hard);
        above += r.agreement > *hard ? 1 : 0;
      }
    }
    const RunOutcome& g = sorted[first];
    const Spread a = spread(agreement), p = spread(perplexity), k = spread(kl), d = spread(minus_hard);
    t.add_row({std::to_string(g.depth), g.labels, g.soft_target.empty() ? "—" : g.soft_target, std::to_string(a.n), pct(a),
               d.n ? fmt::format("{:+.1f} ± {:.1f} pt ({:+.1f}…{:+.1f})", 100 * d.mean, 100 * d.sd, 100 * d.lo, 100 * d.hi) : "",
               d.n ? fmt::format("{} of {}", above, d.n) : "",
               fmt::format("{:.1f} ± {:.1f} ({:.1f}–{:.1f})", p.mean, p.sd, p.lo, p.hi),
               fmt::format("{:.3f} ± {:.3f}", k.mean, k.sd)});
    figures["seed_table"].push_back({{"layers", g.depth}, {"labels", g.labels}, {"soft_target", g.soft_target},
                                     {"runs", a.n}, {"agreement_mean", a.mean}, {"agreement_sd", a.sd},
                                     {"agreement_min", a.lo}, {"agreement_max", a.hi}, {"minus_hard_mean", d.mean},
                                     {"minus_hard_sd", d.sd}, {"perplexity_mean", p.mean}, {"perplexity_sd", p.sd},
                                     {"kl_t1_mean", k.mean}, {"kl_t1_sd", k.sd}});
    first = last;
  }
  t.add_note("sd: the sample standard deviation over the seeds (n − 1). \"− hard, same seed\": the run's agreement minus "
             "the hard run's trained on the same windows in the same order, so the order's luck cancels; \"seeds above "
             "hard\" counts the seeds where the run beat it. Every run starts from the same pruned student.");
  t.emit(o.csv_path);
  return true;
}

void seed_table_from_records(std::span<const std::string> paths, const CommonOptions& options) {
  check_output_path(options.json_path, "--json");
  RunRecord record;
  record.binary = "ch08_distillation";
  std::vector<RunOutcome> runs;
  for (const std::string& path : paths)
    for (RunOutcome& r : outcomes_from_record(path)) runs.push_back(std::move(r));
  if (!print_seed_table(runs, options, record.figures))
    throw UsageError("--seed-table: the records hold runs of one seed only; give the records of two or more seeds");
  record.write(options.json_path);
}

void check_distinct_seeds(std::span<const uint64_t> seeds) {
  for (std::size_t i = 0; i < seeds.size(); ++i)
    if (std::count(seeds.begin(), seeds.end(), seeds[i]) > 1)
      throw UsageError(fmt::format("--seeds: seed {} is given twice", seeds[i]));
}

}  // namespace infer::distill
