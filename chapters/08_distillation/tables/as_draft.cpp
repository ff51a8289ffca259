#include "as_draft.hpp"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "07_speculative_decoding/make_drafter.hpp"
#include "07_speculative_decoding/model_drafter.hpp"
#include "07_speculative_decoding/speedup.hpp"  // costs, timing, the formula
#include "measure/table.hpp"
#include "student_gguf.hpp"

namespace infer::distill {

namespace {

// ch08_student.gguf, or ch08_student-L20.gguf when several depths are trained.
std::string student_path(const std::string& out, int depth, bool several) {
  if (!several) return out;
  const std::filesystem::path p(out);
  return (p.parent_path() / fmt::format("{}-L{}{}", p.stem().string(), depth, p.extension().string())).string();
}

}  // namespace

std::vector<StudentDraft> save_students(std::vector<TrainedRun>& runs, std::span<const PrunedStudent> pruned,
                                        const std::string& out, bool several_depths,
                                        const std::map<std::string, gguf::Value>& metadata, nlohmann::json& figures) {
  std::vector<StudentDraft> drafts;
  for (TrainedRun& r : runs) {
    if (!r.student) continue;
    const std::string path = student_path(out, r.depth, several_depths);
    train::write_student_gguf(path, *r.student, metadata);
    fmt::print("student ({} layers, {}) written to {} — load it with -m, or in chapter 07 with --draft file "
               "--draft-model {}\n", r.depth, r.spec.name, path, path);
    double untrained = 0;  // the pruned student's agreement before training
    for (const PrunedStudent& p : pruned)
      if (p.depth == r.depth) untrained = 100 * p.before.agreement.rate();
    fmt::print("headline: {} layers, {}: held-out agreement with the teacher {:.1f}% (pruned, untrained: {:.1f}%), "
               "perplexity {:.2f}; training {:.1f} tokens/s\n", r.depth, r.spec.name, 100 * r.after.agreement.rate(),
               untrained, r.after.perplexity, r.tokens_per_second());
    figures["students"].push_back({{"layers", r.depth}, {"labels", r.spec.name}, {"path", path}});
    drafts.push_back({fmt::format("student, {} layers ({})", r.depth, r.spec.name), train::to_llama(*r.student)});
    r.student.reset();
  }
  std::fflush(stdout);  // before the draft table's progress lines on stderr
  return drafts;
}

void print_draft_table(LoadedModel& m, const CommonOptions& o, std::vector<StudentDraft> students, int gamma, int repeats,
                       nlohmann::json& figures) {
  const std::vector<int32_t> prompt = encode_prompt(m, o);
  const auto capacity = std::ssize(prompt) + o.n_predict + gamma + 1;
  SamplingParams draft_sampling = o.sampling;
  draft_sampling.seed = o.sampling.seed + 1;  // the draft's own stream of draws, as in chapter 07

  std::vector<std::unique_ptr<Drafter>> drafters;
  for (StudentDraft& s : students)
    drafters.push_back(std::make_unique<ModelDrafter>(s.name, std::move(s.model), capacity, draft_sampling));
  drafters.push_back(spec::make_drafter("q4_1", m, o, "", capacity));

  // c: a guess's cost ÷ a target decode step, both at the middle of a generation.
  const std::vector<int32_t> context =
      repeated_tokens(m.tokenizer, o.prompt, std::ssize(prompt) + o.n_predict / 2);
  std::vector<Drafter*> raw;
  for (auto& d : drafters) raw.push_back(d.get());
  const spec::MeasuredCosts costs = spec::measure_costs(m.model, context, gamma, raw, gamma, 7);
  std::vector<spec::Config> configs = {{nullptr, 0}};
  for (std::size_t i = 0; i < raw.size(); ++i) configs.push_back({raw[i], gamma});
  const std::vector<spec::Timed> runs = spec::time_configs(m, configs, prompt, o.n_predict, o.sampling, repeats, "drafts");

  Table t(fmt::format("The student as chapter 07's draft, γ = {}: {} tokens after the {}-token prompt, median of {} runs",
                      gamma, o.n_predict, prompt.size(), repeats),
          {"draft", "MB / guess", "c", "α", "tokens / pass", "tokens/s", "speed-up", "predicted", "tokens = plain", "verdict"});
  t.add_row({"none: plain decoding", "", "", "", "", fmt::format("{:.1f}", runs[0].tokens_per_second()), "1.00×", "", "", ""});
  for (std::size_t i = 0; i < drafters.size(); ++i) {
    const spec::Timed& r = runs[i + 1];
    const double c = costs.c[i], speedup = runs[0].seconds / r.seconds;
    const double predicted = spec::predicted_for(r.stats, c, costs);
    const auto* md = dynamic_cast<const ModelDrafter*>(drafters[i].get());
    const double mb = md ? static_cast<double>(md->model().weights().bytes_per_token()) / 1e6 : 0;
    t.add_row({drafters[i]->name(), fmt::format("{:.1f}", mb), fmt::format("{:.3f}", c), fmt::format("{:.3f}", r.stats.alpha()),
               fmt::format("{:.2f}", r.stats.tokens_per_round()), fmt::format("{:.1f}", r.tokens_per_second()),
               fmt::format("{:.2f}×", speedup), fmt::format("{:.2f}×", predicted),
               o.sampling.temperature > 0 ? "—" : (r.tokens == runs[0].tokens ? "✓" : "✗ DIFFERENT"),
               speedup < 1 ? "SLOWER" : "faster"});
    figures["as_draft"].push_back({{"draft", drafters[i]->name()}, {"c", c}, {"alpha", r.stats.alpha()},
                                   {"tokens_per_pass", r.stats.tokens_per_round()}, {"speedup", speedup},
                                   {"predicted", predicted}, {"identical_to_plain", r.tokens == runs[0].tokens}});
  }
  t.add_note(fmt::format("Target: the fp32 teacher, decode step {}. c = a guess's time ÷ that step; α = the share of "
                         "checked guesses accepted; predicted = E(α, γ)/(γ·c + v) with the measured verification cost "
                         "v (chapter 07). The students are fp32, as trained.", format_seconds(costs.decode_seconds)));
  t.emit(o.csv_path);
}

}  // namespace infer::distill
