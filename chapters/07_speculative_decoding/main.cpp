// ch07_speculative_decoding — a cheap draft guesses γ tokens, the target checks them in one pass.
//
//   ch07_speculative_decoding                       the demo (accepted guesses in green on a
//                                                   terminal), then every table
//   ch07_speculative_decoding --draft lookup -p ... one draft, your prompt: its demo only
//   ch07_speculative_decoding --draft q8_0 --tables that demo, then every table
//   ch07_speculative_decoding --no-tables           only the demo
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "app/run_record.hpp"
#include "02_kv_cache/cached_generate.hpp"  // plain decoding, the baseline
#include "03_gqa/grouped_kv_cache.hpp"
#include "make_drafter.hpp"
#include "marked_streamer.hpp"
#include "measure/timing.hpp"
#include "round_record.hpp"
#include "speculative_decode.hpp"
#include "studies.hpp"
#include "tree_table.hpp"

using namespace infer;

namespace {

struct Options {
  std::string draft = "int8", draft_model, plot = "ch07_speedup_vs_gamma.svg";
  std::vector<std::string> drafts = {"int8", "int4-g128", "nf4", "q8_0", "q4_1", "layers-10", "layers-20", "lookup"};
  std::vector<int> gammas = {1, 2, 3, 4, 6, 8};
  int gamma = 4, repeats = 3;
  bool tables = false, no_tables = false, tree = false;
};

// The demo: one speculative generation, streamed, then the same prompt decoded plainly.
void run_demo(LoadedModel& m, const CommonOptions& o, const Options& opt, RunRecord& record, bool with_tables) {
  record.prompt_ids = encode_prompt(m, o);
  const auto capacity = std::ssize(record.prompt_ids) + o.n_predict + opt.gamma + 1;
  std::unique_ptr<Drafter> drafter = spec::make_drafter(opt.draft, m, o, opt.draft_model, capacity);

  GroupedKvCache cache(m.model.config(), capacity, m.model.device());
  Sampler sampler(o.sampling);
  MarkedStreamer stream(m.tokenizer, record.text);
  std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
  const SpeculativeOptions options{.gamma = opt.gamma, .n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5};
  const SpeculativeGeneration gen =
      generate_speculative(m.model, cache, *drafter, m.tokenizer, record.prompt_ids, sampler, options, std::ref(stream));
  stream.finish();
  record.steps = gen.steps;

  // Chapter 03's plain decoding of the same prompt with the same settings.
  GroupedKvCache plain_cache(m.model.config(), capacity, m.model.device());
  Sampler plain_sampler(o.sampling);
  Stopwatch clock;
  const Generation plain = generate_cached(m.model, m.tokenizer, record.prompt_ids, plain_cache, plain_sampler,
                                           {.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5});
  const double plain_seconds = clock.seconds();
  RunRecord plain_record = record;
  plain_record.steps = plain.steps;
  const RunComparison cmp = compare_runs(record, plain_record);
  const bool greedy = o.sampling.temperature == 0.0f;

  const SpeculativeStats& s = gen.stats;
  fmt::print("\n{} tokens with draft \"{}\", γ = {}: {} rounds, {} of {} guesses accepted (α = {:.3f}), {:.2f} tokens "
             "per target pass; {:.1f} tokens/s against {:.1f} for plain decoding: {:.2f}× (this one run{})\n",
             gen.steps.size(), drafter->name(), opt.gamma, s.rounds, s.accepted, s.drafted, s.alpha(),
             s.tokens_per_round(), static_cast<double>(gen.steps.size()) / s.total_seconds,
             static_cast<double>(plain.steps.size()) / plain_seconds,
             plain_seconds / s.total_seconds * static_cast<double>(gen.steps.size()) / static_cast<double>(plain.steps.size()),
             with_tables ? "; medians below" : "");
  if (greedy)
    fmt::print("against chapter 03's greedy decoding: {}, largest top-5 logit difference {:g}\n\n",
               cmp.identical_tokens() ? "identical tokens" : fmt::format("FIRST DIFFERENCE AT STEP {}", cmp.first_divergence + 1),
               cmp.max_logit_diff);
  else
    fmt::print("sampling (temperature {}): the tokens differ from a plain run's, their distribution does not\n\n",
               o.sampling.temperature);
  record.figures["demo"] = {{"draft", spec::draft_label(opt.draft, opt.draft_model)}, {"gamma", opt.gamma},
                            {"tokens", gen.steps.size()}, {"rounds", s.rounds}, {"drafted", s.drafted},
                            {"accepted", s.accepted}, {"alpha", s.alpha()}, {"seconds", s.total_seconds}, {"plain_seconds", plain_seconds},
                            {"prefill_seconds", s.prefill_seconds}, {"draft_seconds", s.draft_seconds},
                            {"verify_seconds", s.verify_seconds},
                            {"identical_to_plain", greedy && cmp.identical_tokens()},
                            {"round_log", spec::rounds_json(gen.rounds, m.tokenizer)}};
  if (greedy && !cmp.identical_tokens()) throw std::runtime_error("speculative decoding changed the greedy tokens");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 07: speculative decoding — a cheap draft guesses, the target verifies in one pass"};
  CommonOptions o;
  o.prompt = "The history of the printing press begins in";
  o.n_predict = 64;
  Options opt;
  add_common_options(app, o);
  app.add_option("--draft", opt.draft, "the demo's draft: int8, int4-g128, nf4, q8_0, q4_1, layers-K, lookup, target, file")
      ->capture_default_str();
  app.add_option("--gamma", opt.gamma, "guesses per round")->check(whole_number(1, 8))->capture_default_str();
  app.add_option("--draft-model", opt.draft_model,
                 "a GGUF with the target's vocabulary: draft 'file' (the demo's draft unless --draft says otherwise)");
  app.add_option("--drafts", opt.drafts, "the drafts the tables measure (comma-separated)")->delimiter(',')->capture_default_str();
  app.add_option("--gammas", opt.gammas, "the γ of the sweep (comma-separated, 1…8)")
      ->delimiter(',')->check(whole_number(1, 8))->capture_default_str();
  app.add_option("--repeats", opt.repeats, "runs per configuration (tables show medians)")
      ->check(whole_number(1, 100))->capture_default_str();
  app.add_option("--plot", opt.plot, "SVG plot of measured and predicted speed-up against γ")->capture_default_str();
  CLI::Option* tables = app.add_flag("--tables", opt.tables, "every table, of every draft in --drafts (the default "
                                                             "when neither --draft nor --draft-model names one)");
  app.add_flag("--no-tables", opt.no_tables, "only the demo")->excludes(tables);
  app.add_flag("--tree", opt.tree, "the tree table (tables/tree_table.hpp): linear γ against trees, drafts q4_1 and layers-10, greedy");

  // Line by line even into a pipe or a file, so the streamed text's last line is out before
  // anything written to stderr after it (progress lines, errors).
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  return run_main(app, argc, argv, [&] {
    // Every flag is checked before any work.
    if (!opt.draft_model.empty()) {
      if (!std::filesystem::exists(opt.draft_model)) throw UsageError("--draft-model " + opt.draft_model + ": no such file");
      if (app.count("--draft") == 0) opt.draft = "file";  // the demo uses the model given
    }
    spec::check_draft_name(opt.draft, opt.draft_model);
    std::vector<std::string> drafts = opt.drafts;
    if (!opt.draft_model.empty() && std::find(drafts.begin(), drafts.end(), "file") == drafts.end()) drafts.push_back("file");
    for (const std::string& d : drafts) spec::check_draft_name(d, opt.draft_model);
    const std::vector<int>& gammas = opt.gammas;
    // A run that names its draft is a question about that draft: its demo, not the minutes that
    // every table of every draft takes, unless asked for.
    const bool named = app.count("--draft") > 0 || !opt.draft_model.empty();
    const bool with_tables = opt.tables || (!named && !opt.no_tables);
    if (opt.tree) spec::check_tree_options(o);
    if (!with_tables && !opt.tree)
      refuse_flags(app, opt.no_tables ? "--no-tables" : "a run that names its draft (add --tables)",
                   {"--csv", "--drafts", "--gammas", "--repeats", "--plot"});
    if (with_tables) check_output_path(opt.plot, "--plot");

    LoadedModel m = load_model(o);
    RunRecord record = new_record("ch07_speculative_decoding", o);
    run_demo(m, o, opt, record, with_tables);
    if (with_tables) {
      spec::SpeculationStudy study(m, o, {drafts, opt.draft_model, opt.gamma, gammas, opt.repeats, opt.plot}, record.figures);
      study.run();
    }
    if (opt.tree) spec::tree_table(m, o, {.gamma = opt.gamma, .repeats = opt.repeats}, record.figures);
    if (!with_tables && !opt.no_tables && !opt.tree) fmt::print("(every table, of every draft: add --tables; a few minutes)\n");
    save_record(record, o, &m.tokenizer);
  });
}
