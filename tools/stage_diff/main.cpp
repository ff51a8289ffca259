// stage_diff — do two runs agree? Compares the --json records of two chapter binaries.
//
//   ch01_naive_loop -p "Hello" -n 32 --json a.json
//   ch02_kv_cache   -p "Hello" -n 32 --json b.json --skip-tables
//   stage_diff a.json b.json
//
// Says first whether the runs used the same model file and the same settings (and, when they
// differ, the CPU backends: --backend fast against reference), then whether the prompts and
// generated tokens agree, the first step where they diverge (ids and text), and the largest
// difference between the top logits of the same token.
#include <string>

#include <fmt/format.h>

#include "app/flags.hpp"  // not cli.hpp: this tool never loads a model
#include "app/run_record.hpp"

using namespace infer;

namespace {

constexpr const char* kExitCodes =
    "Exit status: 0 when the prompts and the generated tokens are the same, 1 when they differ, 2 for bad usage: "
    "an unreadable file, or records that cannot be compared (of different kinds, or without generated steps).\n";

// A token's text as a quoted, one-line string: "\n" for a newline.
std::string shown(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '\n' ? std::string("\\n") : c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + "\"";
}

std::string token_at(const RunRecord& r, int64_t step) {
  if (step >= std::ssize(r.steps)) return "(ended)";
  const int32_t token = r.steps[step].token;
  return step < std::ssize(r.step_texts) ? fmt::format("{} {}", token, shown(r.step_texts[step])) : std::to_string(token);
}

std::string model_name(const RunRecord& r) {
  const std::string file = r.model.substr(r.model.find_last_of('/') + 1);
  return r.model_sha256.empty() ? file : fmt::format("{} (sha256 {}…)", file, r.model_sha256.substr(0, 12));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compare the --json records of two runs: same model and settings? same tokens? where do they diverge? "
               "how far apart are the logits?"};
  app.footer(kExitCodes);
  std::string path_a, path_b;
  app.add_option("A", path_a, "first run record (--json output of a chapter binary)")->required()->check(CLI::ExistingFile);
  app.add_option("B", path_b, "second run record")->required()->check(CLI::ExistingFile);
  bool differ = false;
  const int status = run_main(app, argc, argv, [&] {
    RunRecord a, b;
    try {
      a = RunRecord::read(path_a);
      b = RunRecord::read(path_b);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
    if (a.kind != b.kind)
      throw UsageError(fmt::format("{} is a {} record and {} a {} record: only two generations can be compared", path_a,
                                   a.kind, path_b, b.kind));
    for (const auto& [path, r] : {std::pair{path_a, &a}, {path_b, &b}})
      if (r->steps.empty())
        throw UsageError(fmt::format("{} has no generated steps ({} record of {}): nothing to compare", path, r->kind, r->binary));

    const RunComparison c = compare_runs(a, b);
    // What makes the comparison unfair comes first.
    if (!c.same_model) fmt::print("model:             DIFFERENT (A: {}, B: {})\n", model_name(a), model_name(b));
    for (const std::string& d : c.setting_differences) fmt::print("setting:           DIFFERENT {}\n", d);
    // Not a different setting: the same operations, their sums rounded in a different order.
    if (a.backend != b.backend)
      fmt::print("backend:           A {}, B {}: equal within rounding, not bit for bit (docs/architecture.md)\n", a.backend,
                 b.backend);
    fmt::print("A: {}, {} ({} prompt tokens, {} generated)\n", a.binary, model_name(a), a.prompt_ids.size(), a.steps.size());
    fmt::print("B: {}, {} ({} prompt tokens, {} generated)\n", b.binary, model_name(b), b.prompt_ids.size(), b.steps.size());
    differ = !c.identical_tokens();
    if (!c.same_prompt) {
      fmt::print("prompt tokens:     DIFFERENT: the runs saw different inputs, so their tokens and logits are not compared\n");
      return;
    }
    fmt::print("prompt tokens:     identical\n");
    if (c.first_divergence < 0)
      fmt::print("generated tokens:  identical over {} steps\n", c.compared_steps);
    else
      fmt::print("generated tokens:  diverge at step {} (A: {}, B: {})\n", c.first_divergence + 1, token_at(a, c.first_divergence),
                 token_at(b, c.first_divergence));
    fmt::print("top logits:        largest difference {:.3g} ({:.2g} of the largest logit {:.3g}), up to the divergence\n",
               c.max_logit_diff, c.max_logit > 0 ? c.max_logit_diff / c.max_logit : 0.0, c.max_logit);
  });
  return status != 0 ? status : (differ ? 1 : 0);
}
