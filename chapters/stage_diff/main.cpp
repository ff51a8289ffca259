// stage_diff — do two runs agree? Compares the --json records of two chapter binaries.
//
//   ch01_naive_loop -p "Hello" -n 32 --json a.json
//   ch02_kv_cache   -p "Hello" -n 32 --json b.json
//   stage_diff a.json b.json
//
// Prints whether the prompts and generated tokens agree, the first step where they diverge,
// and the largest difference between the top logits of the same token. Exit status: 0 when the
// tokens agree, 1 when they differ, 2 for bad usage or an unreadable file.
#include <fmt/format.h>

#include "app/cli.hpp"
#include "app/run_record.hpp"

using namespace infer;

int main(int argc, char** argv) {
  CLI::App app{"Compare the --json records of two runs: same tokens? where do they diverge? how far apart are the logits?"};
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
    const RunComparison c = compare_runs(a, b);
    fmt::print("A: {} ({} prompt tokens, {} generated)\n", a.binary, a.prompt_ids.size(), a.steps.size());
    fmt::print("B: {} ({} prompt tokens, {} generated)\n", b.binary, b.prompt_ids.size(), b.steps.size());
    fmt::print("prompt tokens:     {}\n", c.same_prompt ? "identical" : "DIFFERENT");
    if (c.first_divergence < 0)
      fmt::print("generated tokens:  identical over {} steps\n", c.compared_steps);
    else
      fmt::print("generated tokens:  diverge at step {} (A: {}, B: {})\n", c.first_divergence + 1,
                 c.first_divergence < static_cast<int64_t>(a.steps.size()) ? std::to_string(a.steps[static_cast<std::size_t>(c.first_divergence)].token) : "end",
                 c.first_divergence < static_cast<int64_t>(b.steps.size()) ? std::to_string(b.steps[static_cast<std::size_t>(c.first_divergence)].token) : "end");
    fmt::print("top logits:        largest difference {:.3g} ({:.2g} of the largest logit {:.3g})\n",
               c.max_logit_diff, c.max_logit > 0 ? c.max_logit_diff / c.max_logit : 0.0, c.max_logit);
    differ = !c.identical_tokens();
  });
  return status != 0 ? status : (differ ? 1 : 0);
}
