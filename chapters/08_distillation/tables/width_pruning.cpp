#include "width_pruning.hpp"

#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/table.hpp"
#include "student.hpp"
#include "width_importance.hpp"

namespace infer::distill {
namespace {

// The parameter count of the depth-pruned student of `depth` layers.
int64_t depth_parameters(const LlamaConfig& teacher, int depth) {
  LlamaConfig c = teacher;
  c.n_layers = depth;
  return c.parameter_count();
}

std::string millions(int64_t n) { return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6); }

// Σ of the kept neurons' importance ÷ Σ of all, over the layers (mean of the per-layer shares).
double kept_share(const std::vector<std::vector<double>>& scores, const std::vector<std::vector<int>>& kept) {
  double share = 0;
  for (std::size_t l = 0; l < scores.size(); ++l) {
    double all = std::accumulate(scores[l].begin(), scores[l].end(), 0.0), in = 0;
    for (int j : kept[l]) in += scores[l][j];
    share += all > 0 ? in / all : 0.0;
  }
  return share / static_cast<double>(scores.size());
}

std::string kept_list(const std::vector<int>& kept) { return fmt::format("{}", fmt::join(kept, " ")); }

struct WidthStudy {  // one depth-pruned student and its width-pruned match
  const PrunedStudent* depth = nullptr;
  train::WidthShape shape;
  train::WidthCut cut, least, random;
  Score before, least_before, random_before;
};

}  // namespace

void add_width_options(CLI::App& app, WidthOptions& w) {
  CLI::Option* on = app.add_flag("--width-prune", w.on, "the width-pruning table: a student with every layer but fewer "
                                 "key/value groups and MLP neurons (kept by importance) at each depth student's "
                                 "parameter count, trained with the same runs");
  app.add_option("--width-groups", w.groups, "key/value groups each layer of the width student keeps (default: "
                 "attention and MLP shrink alike)")->check(CLI::Range(1, 1024))->needs(on);
}

void check_width_options(const WidthOptions& w, const LlamaConfig& c, std::span<const int> depths) {
  if (!w.on) return;
  if (w.groups > c.n_kv_heads)
    throw UsageError(fmt::format("--width-groups {}: the teacher has {} key/value heads", w.groups, c.n_kv_heads));
  for (int depth : depths)
    if (train::matched_width(c, depth_parameters(c, depth), w.groups).neurons == 0)
      throw UsageError(fmt::format("--width-prune: no width{} with 1 to {} MLP neurons has the {} parameters of the "
                                   "{}-layer student", w.groups ? fmt::format(" of {} key/value group{}", w.groups, w.groups > 1 ? "s" : "") : "",
                                   c.d_ff, format_count(depth_parameters(c, depth)), depth));
}

void print_width_pruning(LoadedModel& m, const HeldOut& h, std::span<const int32_t> calibration,
                         std::span<const PrunedStudent> depth_students, std::span<const TrainedRun> depth_runs,
                         const train::TeacherLabels& labels, std::span<const RunSpec> specs, const TrainSettings& settings,
                         const WidthOptions& w, const CommonOptions& o, nlohmann::json& figures) {
  const LlamaConfig& tc = m.model.config();
  const int L = tc.n_layers, G = tc.n_kv_heads;
  std::vector<int> all(L);
  std::iota(all.begin(), all.end(), 0);
  const uint64_t seed = settings.seeds.front();

  // One pass of the teacher over the calibration windows, then the cuts and the untrained students.
  std::vector<WidthStudy> studies;
  train::WidthImportance importance;
  {
    train::Student<float> whole = train::Student<float>::from_teacher(m.model, all);  // the teacher, in training form
    importance = train::width_importance(whole, calibration, h.window);  // the windows of block influence
    for (const PrunedStudent& p : depth_students) {
      WidthStudy s;
      s.depth = &p;
      s.shape = train::matched_width(tc, depth_parameters(tc, p.depth), w.groups);
      s.cut = train::width_cut(importance, s.shape.groups, s.shape.neurons, train::WidthChoice::most_important);
      s.least = train::width_cut(importance, s.shape.groups, s.shape.neurons, train::WidthChoice::least_important);
      s.random = train::width_cut(importance, s.shape.groups, s.shape.neurons, train::WidthChoice::random, seed);
      auto score = [&](const train::WidthCut& cut, const std::string& label) {
        Llama pruned = train::to_llama(train::width_pruned(whole, cut));
        return score_on(pruned, h, label);
      };
      s.before = score(s.cut, "width, by importance");
      s.least_before = score(s.least, "width, least important");
      s.random_before = score(s.random, "width, at random");
      studies.push_back(std::move(s));
    }
  }

  // Table 1: the importance of every group, and what each cut keeps.
  std::vector<std::string> headers = {"layer"};
  for (int g = 0; g < G; ++g) headers.push_back(fmt::format("KV group {}", g));
  headers.emplace_back("neuron mean");
  for (const WidthStudy& s : studies) {
    headers.push_back(fmt::format("groups kept ({} of {})", s.shape.groups, G));
    headers.push_back(fmt::format("{} of {} neurons: their share", s.shape.neurons, tc.d_ff));
  }
  Table imp(fmt::format("Width importance: mean ‖attention output‖₂ of each KV group (its {} query heads) and mean "
                        "|silu(gate)·up| of the MLP neurons over {} calibration tokens (the end of Judges)",
                        tc.n_heads / G, calibration.size()),
            headers);
  for (int l = 0; l < L; ++l) {
    std::vector<std::string> row = {std::to_string(l)};
    for (int g = 0; g < G; ++g) row.push_back(fmt::format("{:.3f}", importance.group[l][g]));
    const std::vector<double>& n = importance.neuron[l];
    row.push_back(fmt::format("{:.4f}", std::accumulate(n.begin(), n.end(), 0.0) / static_cast<double>(n.size())));
    for (const WidthStudy& s : studies) {
      row.push_back(kept_list(s.cut.groups[l]));
      row.push_back(cell::percent(kept_share({n}, {s.cut.neurons[l]})));
    }
    imp.add_row(row);
    figures["width_importance"].push_back({{"layer", l}, {"groups", importance.group[l]}});
  }
  for (const WidthStudy& s : studies)
    imp.add_note(fmt::format("The {} most important of {} neurons hold {:.1f}% of the layer's Σ|silu(gate)·up| on "
                             "average over the layers (the least important {}: {:.1f}%; at random: {:.1f}%, about {}/{}).",
                             s.shape.neurons, tc.d_ff, 100 * kept_share(importance.neuron, s.cut.neurons), s.shape.neurons,
                             100 * kept_share(importance.neuron, s.least.neurons),
                             100 * kept_share(importance.neuron, s.random.neurons), s.shape.neurons, tc.d_ff));
  imp.add_note("Each layer keeps its own most important groups and neurons, as many in every layer, so the student is "
               "one plain grouped-query Llama: fewer heads, a narrower MLP, the same d, head size, norms and embedding.");
  imp.emit(o.csv_path);

  // The width students train with every run of the depth students: the same specs, seeds and settings.
  std::vector<std::vector<TrainedRun>> width_runs;
  for (const WidthStudy& s : studies) {
    PrunedStudent p{L, all, s.before, std::make_shared<const train::WidthCut>(s.cut),
                    fmt::format("width {}/{} heads, MLP {}", s.shape.groups * (tc.n_heads / G), s.shape.groups, s.shape.neurons)};
    width_runs.push_back(train_students(m, std::span(&p, 1), labels, specs, settings, h));
    for (TrainedRun& r : width_runs.back()) r.student.reset();
  }

  // Table 2: depth against width, before and after.
  Table t(fmt::format("Width against depth pruning at an equal parameter count: held-out text (Ruth, {} tokens in windows "
                      "of {}), before training and after {} training tokens per run", h.tokens.size(), h.window,
                      depth_runs.empty() ? 0 : depth_runs[0].tokens),
          {"model", "layers", "heads (query / KV)", "MLP width", "parameters", "training", "last loss", "perplexity",
           "NLL (nats/token)", "top-1 = next token", "agreement with the teacher", "vs before training", "width − depth",
           "KL at T=1", "tokens/s"});
  auto shape_cells = [](const LlamaConfig& c) {
    return std::vector<std::string>{std::to_string(c.n_layers), fmt::format("{} / {}", c.n_heads, c.n_kv_heads),
                                    std::to_string(c.d_ff), millions(c.parameter_count())};
  };
  auto add = [&](const std::string& name, const LlamaConfig& c, const std::string& training, const Score& s,
                 const TrainedRun* run, const Score& before, const std::string& versus) {
    std::vector<std::string> row = {name};
    for (std::string& x : shape_cells(c)) row.push_back(std::move(x));
    const bool trained = run != nullptr;
    row.insert(row.end(), {training, trained ? fmt::format("{:.4f}", run->loss.back()) : "", fmt::format("{:.2f}", s.perplexity),
                           fmt::format("{:.3f}", s.mean_nll), cell::percent(s.next_token), cell::percent(s.agreement.rate()),
                           trained ? fmt::format("{:+.1f} pt", 100 * (s.agreement.rate() - before.agreement.rate())) : "",
                           versus, trained ? fmt::format("{:.3f}", run->kl_t1) : "",
                           trained ? fmt::format("{:.1f}", run->tokens_per_second()) : ""});
    t.add_row(row);
  };
  const Score teacher = teacher_score(h);
  add("teacher", tc, "—", teacher, nullptr, teacher, "");
  for (std::size_t i = 0; i < studies.size(); ++i) {
    const WidthStudy& s = studies[i];
    const PrunedStudent& p = *s.depth;
    LlamaConfig dc = tc;
    dc.n_layers = p.depth;
    const LlamaConfig wc = train::width_config(tc, s.shape.groups, s.shape.neurons);
    const std::string width_name = fmt::format("width: {} of {} KV groups, {} of {} neurons", s.shape.groups, G,
                                               s.shape.neurons, tc.d_ff);
    auto pt = [](double a, double b) { return fmt::format("{:+.1f} pt", 100 * (a - b)); };
    add(fmt::format("depth: {} layers by block influence", p.depth), dc, "— (pruned)", p.before, nullptr, p.before, "");
    add(width_name + ", by importance", wc, "— (pruned)", s.before, nullptr, s.before,
        pt(s.before.agreement.rate(), p.before.agreement.rate()));
    add("  the same widths, least important kept", wc, "— (pruned)", s.least_before, nullptr, s.least_before,
        pt(s.least_before.agreement.rate(), p.before.agreement.rate()));
    add(fmt::format("  the same widths, kept at random (seed {})", seed), wc, "— (pruned)", s.random_before, nullptr,
        s.random_before, pt(s.random_before.agreement.rate(), p.before.agreement.rate()));
    nlohmann::json study = {{"depth", p.depth}, {"depth_parameters", dc.parameter_count()}, {"groups", s.shape.groups},
                            {"neurons", s.shape.neurons}, {"width_parameters", wc.parameter_count()},
                            {"depth_before", p.before.json()}, {"width_before", s.before.json()},
                            {"least_important_before", s.least_before.json()}, {"random_before", s.random_before.json()}};
    for (const TrainedRun& wr : width_runs[i]) {
      const TrainedRun* dr = nullptr;
      for (const TrainedRun& r : depth_runs)
        if (r.depth == p.depth && r.seed == wr.seed && r.spec.name == wr.spec.name && r.spec.loss.target == wr.spec.loss.target) dr = &r;
      const std::string target = soft_target_name(wr.spec.loss, labels.k);
      const std::string training = wr.spec.name + (target.empty() ? "" : ", " + target) +
                                   (settings.seeds.size() > 1 ? fmt::format(", seed {}", wr.seed) : "");
      if (dr != nullptr) add(fmt::format("depth: {} layers", p.depth), dc, training, dr->after, dr, p.before, "");
      add(width_name, wc, training, wr.after, &wr, s.before,
          dr != nullptr ? pt(wr.after.agreement.rate(), dr->after.agreement.rate()) : "");
      study["runs"].push_back({{"labels", wr.spec.name}, {"soft_target", target}, {"seed", wr.seed},
                               {"width_after", wr.after.json()}, {"width_kl_t1", wr.kl_t1}, {"width_last_loss", wr.loss.back()},
                               {"depth_after", dr != nullptr ? dr->after.json() : nlohmann::json()}});
    }
    figures["width_pruning"].push_back(study);
    const int64_t diff = wc.parameter_count() - dc.parameter_count();
    t.add_note(fmt::format("Parameters: the {}-layer depth student {}, the width student {}: width − depth = {} ({:+.3f}%), "
                           "the closest a neuron allows (one neuron is {} numbers: a row of W_gate and of W_up and a "
                           "column of W_down in each of {} layers). {}", p.depth, format_count(dc.parameter_count()),
                           format_count(wc.parameter_count()), (diff >= 0 ? "+" : "") + format_count(diff),
                           100.0 * static_cast<double>(diff) / static_cast<double>(dc.parameter_count()),
                           format_count(int64_t{3} * tc.d_model * L), L,
                           w.groups ? fmt::format("{} groups: --width-groups.", w.groups)
                                    : fmt::format("{} of {} groups: the count whose share comes closest to the share of "
                                                  "neurons kept ({:.1f}%), so attention and MLP shrink alike.",
                                                  s.shape.groups, G, 100.0 * s.shape.neurons / tc.d_ff)));
  }
  t.add_note("width − depth: the row's agreement with the teacher minus the depth student's at the same stage (before "
             "training, or after the same run: labels, windows in the same order, steps and learning rate). The two "
             "controls keep as many groups and neurons as the width student, the least important ones or drawn at random.");
  t.add_note("Held out: perplexity and NLL per token of the text; agreement = the model's greedy next token is the "
             "teacher's; KL at T=1: KL(teacher ‖ student) over the full vocabulary, nats per position, on the first "
             "held-out window.");
  t.emit(o.csv_path);
}

}  // namespace infer::distill
