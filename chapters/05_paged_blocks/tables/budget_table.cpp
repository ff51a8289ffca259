#include "budget_table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "04_batching/workload/workload.hpp"
#include "app/flags.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"

namespace infer::paging {

Budget fixed_budget(const Context& cx, const std::vector<Request>& requests) {
  int64_t longest_prompt = 0;
  for (const Request& r : requests) longest_prompt = std::max(longest_prompt, std::ssize(r.prompt));
  Budget b;
  b.positions = longest_prompt + cx.s.max_len - 1;
  b.per_sequence = static_cast<double>(b.positions) * static_cast<double>(cx.bytes_per_token);
  b.bytes = cx.s.budget_mib > 0 ? cx.s.budget_mib * 1024 * 1024 : b.per_sequence * cx.s.slots;
  b.contiguous_fit = static_cast<int>(std::floor(b.bytes / b.per_sequence));
  if (b.contiguous_fit < 1)
    throw UsageError(fmt::format("--budget-mib {:g}: {} does not hold one sequence of {} positions ({})", cx.s.budget_mib,
                                 format_bytes(b.bytes), b.positions, format_bytes(b.per_sequence)));
  // The paged run must fit the same sequence in whole blocks.
  const int64_t block = cx.s.block_size;
  const double in_blocks = static_cast<double>((b.positions + block - 1) / block * block * cx.bytes_per_token);
  if (in_blocks > b.bytes)
    throw UsageError(fmt::format("--block-size {}: one sequence of {} positions takes {} in such blocks, more than table 2's "
                                 "budget of {}", cx.s.block_size, b.positions, format_bytes(in_blocks), format_bytes(b.bytes)));
  return b;
}

void budget_table(const Context& cx, const std::vector<Request>& requests, const Budget& b, const WorkloadRun& contiguous8) {
  const double budget = b.bytes;
  const int fit_contiguous = b.contiguous_fit;
  const int max_slots = static_cast<int>(requests.size());
  const auto budget_bytes = static_cast<std::size_t>(budget);
  // The two layouts run in turn, --budget-runs times each, and the table reports each one's median
  // time: a single run of either moves by ~10% on a shared machine, as much as the steps paging
  // saves. Every run of a layout makes the same steps and tokens (greedy), so the first one's are kept.
  WorkloadRun contiguous = fit_contiguous == cx.s.slots ? contiguous8 : run_contiguous(cx, requests, fit_contiguous);
  WorkloadRun paged = run_paged(cx, requests, max_slots, cx.s.block_size, budget_bytes, true);
  std::vector<double> contiguous_seconds{contiguous.seconds}, paged_seconds{paged.seconds};
  for (int i = 1; i < cx.s.budget_runs; ++i) {
    contiguous_seconds.push_back(run_contiguous(cx, requests, fit_contiguous).seconds);
    paged_seconds.push_back(run_paged(cx, requests, max_slots, cx.s.block_size, budget_bytes, true).seconds);
  }
  contiguous.seconds = median(contiguous_seconds);
  paged.seconds = median(paged_seconds);
  const int blocks = static_cast<int>(budget_bytes / (cx.s.block_size * cx.bytes_per_token));

  Table t(fmt::format("2. One budget of {:.1f} MB for K and V: how many sequences run at once ({})", budget / 1e6, cx.machine_line),
          {"layout", "sequences the budget holds", "most running at once", "mean batch", "steps",
           fmt::format("total (s, median of {})", cx.s.budget_runs), "throughput (tokens/s)", "preemptions", "tokens = contiguous run"});
  const auto row = [&](const WorkloadRun& r, const std::string& fits) {
    const ServeSummary s = summarize(r.requests, r.steps);
    t.add_row({r.layout, fits, std::to_string(r.max_running), fmt::format("{:.1f}", s.mean_batch()), std::to_string(s.steps),
               cell::secs(r.seconds), fmt::format("{:.1f}", static_cast<double>(r.tokens()) / r.seconds), std::to_string(r.preemptions),
               r.layout == "contiguous" ? "" : fmt::format("{} of {}", same_tokens(r.requests, contiguous.requests), requests.size())});
    cx.figures["budget"].push_back({{"layout", r.layout}, {"fits", fits}, {"max_running", r.max_running},
                                    {"mean_batch", s.mean_batch()}, {"steps", s.steps}, {"seconds", r.seconds},
                                    {"preemptions", r.preemptions}});
  };
  row(contiguous, fmt::format("{} (prompt + {} reserved each)", fit_contiguous, cx.s.max_len));
  row(paged, fmt::format("{} blocks of {}: as many as their lengths allow", blocks, cx.s.block_size));
  t.add_note(fmt::format("Budget: {} contiguous reservation{} of {} positions (the longest prompt + the {}-token cap − 1), {} each{}.",
                         fit_contiguous, fit_contiguous == 1 ? "" : "s", b.positions, cx.s.max_len, format_bytes(b.per_sequence),
                         cx.s.budget_mib > 0 ? " (set by --budget-mib)" : ""));
  t.add_note(fmt::format("Paged: up to {} slots, admitted while the pool has blocks for the prompt and the running sequences' next "
                         "step; a request that finds the pool empty mid-answer is preempted (blocks freed, recomputed later). "
                         "Prefix caching on. Contiguous: chapter 04's scheduler with as many slots as reservations fit.",
                         max_slots));
  cx.emit(t);
}

}  // namespace infer::paging
