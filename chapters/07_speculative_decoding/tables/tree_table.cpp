#include "tree_table.hpp"

#include <functional>
#include <memory>

#include <fmt/format.h>

#include "02_kv_cache/cached_generate.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "make_drafter.hpp"
#include "measure/bandwidth.hpp"
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "model_drafter.hpp"
#include "speculative_decode.hpp"
#include "tree_decode.hpp"

namespace infer::spec {

void check_tree_options(const CommonOptions& o) {
  if (o.sampling.temperature > 0)
    throw UsageError("--tree: tree verification here is greedy only (SpecInfer's sampled rule is exercise 07_acceptance_rule); use --temp 0");
  if (o.sampling.repeat_penalty != 1.0f) throw UsageError("--tree: tree verification here takes no --repeat-penalty");
  if (o.device != "cpu") throw UsageError("--tree: the tree cache runs on the CPU only (--device cpu)");
}

namespace {

// One measured configuration: a linear draft (tree == nullptr) or a tree; both give tokens and counters.
struct Row {
  std::string draft, mode;
  ModelDrafter* linear = nullptr;
  std::unique_ptr<TreeDrafter> tree;
  int guesses = 0, draft_passes = 0;  // per round, at most
  double pass_cost = 0;  // verification pass ÷ decode step
  int64_t rounds = 0, round_tokens = 0, kept = 0;
  std::vector<int32_t> tokens;
  double seconds = 0;
};

}  // namespace

void tree_table(LoadedModel& m, const CommonOptions& o, const TreeTableOptions& t, nlohmann::json& figures) {
  check_tree_options(o);
  Llama& target = m.model;
  const std::vector<int32_t> prompt = encode_prompt(m, o);
  const int n = o.n_predict;
  const int64_t capacity = std::ssize(prompt) + n + kMaxTreeGuesses + 2;
  const int64_t base = std::ssize(prompt) - 1;  // where the cost passes put the root

  std::vector<std::unique_ptr<Drafter>> drafters;
  std::vector<Row> rows;
  for (const std::string& name : t.drafts) {
    drafters.push_back(make_drafter(name, m, o, "", capacity));
    auto* linear = dynamic_cast<ModelDrafter*>(drafters.back().get());
    if (linear == nullptr) throw UsageError(fmt::format("--tree: draft {} is not a model", name));
    Row& row = rows.emplace_back();
    row.draft = name, row.mode = fmt::format("linear γ = {}", t.gamma), row.linear = linear;
    row.guesses = row.draft_passes = t.gamma;
    for (const std::string& s : t.shapes) {
      const TreeShape shape = parse_tree_shape(s);
      // The tree drafter runs the linear one's Llama: the same weights, shared, not copied.
      auto tree = std::make_unique<TreeDrafter>(linear->name(), first_layers(linear->model(), linear->model().config().n_layers),
                                                capacity, shape);
      Row& tree_row = rows.emplace_back();
      tree_row.draft = name, tree_row.mode = "tree " + shape.name(), tree_row.tree = std::move(tree);
      tree_row.guesses = shape.guesses(), tree_row.draft_passes = shape.depth();
    }
  }

  // Work, run in turn each round (medians_in_turn): plain decoding, every row's generation, and
  // the passes a round is made of — a decode step, and each row's verification pass at the
  // prompt's end (its tree as the draft proposes it there).
  std::vector<std::function<void()>> work;
  std::vector<int32_t> plain_tokens;
  GroupedKvCache plain_cache(target.config(), capacity);
  ProgressBar progress("tree table", static_cast<int64_t>(rows.size() + 1) * (t.repeats + 1));
  work.push_back([&] {
    plain_cache.clear();
    Sampler greedy(SamplingParams{});
    plain_tokens.clear();
    for (const StepRecord& s : generate_cached(target, m.tokenizer, prompt, plain_cache, greedy,
                                               {.n_predict = n, .stop_at_end = false, .top_logits = 0}).steps)
      plain_tokens.push_back(s.token);
    progress.advance();
  });
  std::vector<std::unique_ptr<GroupedKvCache>> grouped;
  std::vector<std::unique_ptr<TreeKvCache>> tree_caches;
  for (Row& r : rows) {
    grouped.push_back(std::make_unique<GroupedKvCache>(target.config(), capacity));
    tree_caches.push_back(std::make_unique<TreeKvCache>(target.config(), capacity));
    work.push_back([&r, &m, &t, &prompt, &progress, n, linear_cache = grouped.back().get(), tree_cache = tree_caches.back().get()] {
      r.tokens.clear();
      if (r.linear != nullptr) {
        linear_cache->clear();
        Sampler greedy(SamplingParams{});
        const SpeculativeGeneration g = generate_speculative(m.model, *linear_cache, *r.linear, m.tokenizer, prompt, greedy,
                                                             {.gamma = t.gamma, .n_predict = n, .stop_at_end = false, .top_logits = 0});
        for (const StepRecord& s : g.steps) r.tokens.push_back(s.token);
        r.rounds = g.stats.rounds, r.round_tokens = g.stats.round_tokens, r.kept = g.stats.accepted;
      } else {
        tree_cache->truncate(0);
        const TreeGeneration g = generate_tree(m.model, *tree_cache, *r.tree, m.tokenizer, prompt,
                                               {.n_predict = n, .stop_at_end = false, .top_logits = 0});
        for (const StepRecord& s : g.steps) r.tokens.push_back(s.token);
        r.rounds = g.stats.rounds, r.round_tokens = g.stats.round_tokens, r.kept = g.stats.accepted;
      }
      progress.advance();
    });
  }
  const std::size_t first_cost = work.size();
  GroupedKvCache step_cache(target.config(), capacity);
  target.forward(std::span(prompt).first(static_cast<std::size_t>(base)), 0, step_cache);
  TreeKvCache pass_cache(target.config(), capacity);
  target.forward(std::span(prompt).first(static_cast<std::size_t>(base)), 0, pass_cache);
  std::vector<TokenTree> trees;
  trees.reserve(rows.size());
  for (const Row& r : rows) {
    if (r.linear != nullptr) {
      const Draft d = r.linear->propose(prompt, t.gamma);
      trees.emplace_back(prompt.back());
      for (std::size_t i = 0; i < d.tokens.size(); ++i) trees.back().add(d.tokens[i], static_cast<int>(i));
    } else {
      trees.push_back(r.tree->propose(prompt, r.tree->shape().depth()));
    }
  }
  work.push_back([&] {  // a decode step: one position, its logits
    step_cache.truncate(base);
    target.forward(std::span(prompt).last(1), base, step_cache);
  });
  for (const TokenTree& tree : trees)
    work.push_back([&] {
      pass_cache.set_tree(nullptr, 0);
      pass_cache.truncate(base);
      forward_tree(target, tree, 0, tree.size(), base, pass_cache);
    });
  const std::vector<double> seconds = medians_in_turn(t.repeats, work);
  progress.done();
  const double step = seconds[first_cost];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].seconds = seconds[1 + i];
    rows[i].pass_cost = seconds[first_cost + 1 + i] / step;
  }
  const double plain_seconds = seconds[0];

  const BandwidthResult bw = measure_read_bandwidth();
  Table table(fmt::format("Tree verification against linear γ = {}: the same drafts, greedy, {} tokens, medians of {} runs "
                          "({} threads, read bandwidth {:.2f} GB/s)", t.gamma, n, t.repeats, bw.threads, bw.bytes_per_second / 1e9),
              {"draft", "verification", "guesses / round", "draft passes / round", "kept / pass", "tokens / pass",
               "pass ÷ step", "tokens/s", "speed-up", "vs linear", "tokens = plain"});
  const double plain_tps = static_cast<double>(plain_tokens.size()) / plain_seconds;
  table.add_row({"—", "plain decoding", "0", "0", "0.00", "1.00", "1.00", fmt::format("{:.1f}", plain_tps), cell::times(1.0), "", "✓"});
  nlohmann::json out = nlohmann::json::array();
  double linear_seconds = 0;
  for (const Row& r : rows) {
    if (r.linear != nullptr) linear_seconds = r.seconds;
    const double rounds = static_cast<double>(r.rounds);
    const double tps = static_cast<double>(r.tokens.size()) / r.seconds;
    const bool same = r.tokens == plain_tokens;
    table.add_row({r.draft, r.mode, std::to_string(r.guesses), std::to_string(r.draft_passes),
                   fmt::format("{:.2f}", static_cast<double>(r.kept) / rounds), fmt::format("{:.2f}", static_cast<double>(r.round_tokens) / rounds),
                   fmt::format("{:.2f}", r.pass_cost), fmt::format("{:.1f}", tps), cell::times(plain_seconds / r.seconds),
                   r.linear != nullptr ? "" : cell::times(linear_seconds / r.seconds), same ? "✓" : "DIFFERENT"});
    out.push_back({{"draft", r.draft}, {"mode", r.mode}, {"guesses", r.guesses}, {"draft_passes", r.draft_passes},
                   {"rounds", r.rounds}, {"kept", r.kept}, {"round_tokens", r.round_tokens}, {"pass_cost", r.pass_cost},
                   {"seconds", r.seconds}, {"plain_seconds", plain_seconds}, {"identical_to_plain", same}});
    if (!same) throw std::runtime_error(fmt::format("{} with draft {} changed the greedy tokens", r.mode, r.draft));
  }
  table.add_note("kept / pass: guesses accepted per target pass (the acceptance length); tokens / pass adds the target's own "
                 "token. pass ÷ step: the verification pass over the root and every guess (timed at the prompt's end, "
                 "in turn with the rest) ÷ a decode step. A tree of depth D costs the draft D passes, of several rows each.");
  table.emit(o.csv_path);
  figures["tree"] = {{"decode_step_seconds", step}, {"rows", out}};
}

}  // namespace infer::spec
