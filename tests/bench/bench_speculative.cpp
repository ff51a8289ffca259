// bench_speculative — chapter 07's performance targets (issue: speculative decoding). Prints, for
// every draft at its best γ, the tokens/s of speculative decoding against chapter 03's plain
// greedy decoding of the fp32 target (128 tokens after a 32-token prompt, same run), the speed-up
// the course's formula predicts from the measured α, c and verification cost, and the verdicts:
//
//   1. the best draft reaches at least 1.5× plain decoding;
//   2. every draft's measured speed-up is within 15% of its prediction at its best γ.
//
// Plain decoding and every (draft, γ) run in turn, round after round, so whatever else the
// machine does slows them alike; every figure is a median over the rounds. Never fails.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "app/cli.hpp"
#include "make_drafter.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "speedup.hpp"
#include "tensor/ops.hpp"

using namespace infer;
using namespace infer::spec;

namespace {

constexpr const char* kText =
    "The printing press changed how ideas travelled. Before it, every book was copied by hand, which made books "
    "rare and expensive. Within fifty years of its invention, printers in more than two hundred cities had made "
    "millions of copies.";

std::string verdict(bool met) { return met ? "met" : "NOT met"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: chapter 07's speculative decoding — speed-up over plain decoding, measured vs predicted"};
  CommonOptions o;
  o.threads = 2;
  o.n_predict = 128;
  int prompt_tokens = 32, rounds = 3;
  std::vector<std::string> drafts = {"int8", "int4-g128", "nf4", "q8_0", "q4_1", "lookup"};
  add_common_options(app, o);
  app.add_option("--prompt-tokens", prompt_tokens, "prompt length")->check(CLI::Range(2, 512))->capture_default_str();
  app.add_option("--rounds", rounds, "rounds of timing")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--drafts", drafts, "drafts to time (comma-separated)")->delimiter(',')->capture_default_str();
  return run_main(app, argc, argv, [&] {
    const std::vector<std::string>& names = drafts;
    for (const std::string& d : names) check_draft_name(d, "");
    LoadedModel m = load_model(o);
    const BandwidthResult bw = measure_read_bandwidth();
    std::vector<int32_t> prompt = m.tokenizer.encode(kText);
    if (std::ssize(prompt) < prompt_tokens) prompt = repeated_tokens(m.tokenizer, kText, prompt_tokens);
    prompt.resize(prompt_tokens);
    const std::vector<int> gammas = {1, 2, 3, 4, 6};
    const int64_t capacity = prompt_tokens + o.n_predict + 8;

    const std::vector<int32_t> context = repeated_tokens(m.tokenizer, kText, prompt_tokens + o.n_predict / 2);
    std::vector<std::unique_ptr<Drafter>> drafters;
    std::vector<Drafter*> raw;
    for (const std::string& name : names) {
      drafters.push_back(make_drafter(name, m, o, "", capacity));
      raw.push_back(drafters.back().get());
    }
    const MeasuredCosts costs = measure_costs(m.model, context, gammas.back(), raw, 4, 9);
    std::vector<Config> configs = {{nullptr, 0}};
    for (std::size_t i = 0; i < drafters.size(); ++i)
      for (int g : gammas) configs.push_back({raw[i], g});
    const std::vector<Timed> runs = time_configs(m, configs, prompt, o.n_predict, o.sampling, rounds, "bench");
    const Timed& plain = runs[0];

    fmt::print("{} threads, measured read bandwidth {:.2f} GB/s; {} tokens after a {}-token prompt, greedy, median of {} "
               "rounds; plain decoding (chapter 03, fp32): {:.1f} tokens/s, a decode step {}\n\n",
               num_threads(), bw.bytes_per_second / 1e9, o.n_predict, prompt_tokens, rounds, plain.tokens_per_second(),
               format_seconds(costs.decode_seconds));
    Table t("Each draft at its best γ (of 1, 2, 3, 4, 6)",
            {"draft", "best γ", "c", "α", "tokens / pass", "tokens/s", "speed-up", "predicted", "measured ÷ predicted",
             "within 15%", "tokens = plain"});
    double best = 0;
    std::string best_name;
    bool all_within = true;
    for (std::size_t d = 0; d < drafters.size(); ++d) {
      std::size_t pick = 0;
      for (std::size_t g = 0; g < gammas.size(); ++g) {
        const std::size_t i = 1 + d * gammas.size() + g;
        if (pick == 0 || runs[i].seconds < runs[pick].seconds) pick = i;
      }
      const Timed& r = runs[pick];
      const double speedup = plain.seconds / r.seconds, predicted = predicted_for(r.stats, costs.c[d], costs);
      const bool within = std::fabs(speedup / predicted - 1.0) <= 0.15;
      all_within = all_within && within;
      if (speedup > best) best = speedup, best_name = drafters[d]->name();
      t.add_row({drafters[d]->name(), std::to_string(configs[pick].gamma), fmt::format("{:.3f}", costs.c[d]),
                 fmt::format("{:.3f}", r.stats.alpha()), fmt::format("{:.2f}", r.stats.tokens_per_round()),
                 fmt::format("{:.1f}", r.tokens_per_second()), fmt::format("{:.2f}×", speedup),
                 fmt::format("{:.2f}×", predicted), fmt::format("{:.2f}", speedup / predicted), within ? "yes" : "NO",
                 r.tokens == plain.tokens ? "✓" : "✗"});
    }
    std::string v;
    for (std::size_t g = 1; g < costs.verify.size(); ++g) v += fmt::format("{}{}: {:.2f}×", g > 1 ? ", " : "", g, costs.verify[g]);
    t.add_note("c = draft time per guess ÷ target decode step; verification pass ÷ decode step by γ (all timed in turn, one of each per round): " + v);
    t.print();
    t.append_csv(o.csv_path);

    Table targets("Targets (issue: speculative decoding), 2 threads, same run", {"target", "measured", "verdict"});
    targets.add_row({"best draft ≥ 1.5× plain decoding", fmt::format("{:.2f}× ({})", best, best_name), verdict(best >= 1.5)});
    targets.add_row({"measured within 15% of predicted, every draft at its best γ", all_within ? "all within" : "see above",
                     verdict(all_within)});
    targets.print();
  });
}
