#include "memory_table.hpp"

#include <fmt/format.h>

#include "measure/table.hpp"

namespace infer::paging {

WorkloadRuns memory_table(const Context& cx, const std::vector<Request>& requests) {
  WorkloadRuns runs{run_contiguous(cx, requests, cx.s.slots), {}};
  for (int b : kBlockSizes) runs.paged.push_back(run_paged(cx, requests, cx.s.slots, b, std::size_t{1} << 30, false));

  const WorkloadRun& c = runs.contiguous;
  Table t(fmt::format("1. KV memory on chapter 04's workload, {} slots: reserved vs written, averaged over the steps ({})", cx.s.slots,
                      cx.machine_line),
          {"layout", "mean reserved (MB)", "peak reserved (MB)", "mean written (MB)", "waste", "run (s)", "steps",
           "tokens = contiguous run"});
  t.add_row({fmt::format("contiguous, reserved for prompt + the {}-token cap", cx.s.max_len), mb(c.memory.mean_capped), "",
             mb(c.memory.mean_written), cell::percent(c.memory.capped_waste()), "", "", ""});
  t.add_row({"contiguous, reserved for each request's own length (ch04)", mb(c.memory.mean_reserved), mb(c.memory.peak_reserved),
             mb(c.memory.mean_written), cell::percent(c.memory.waste()), cell::secs(c.seconds), std::to_string(c.steps.size()), ""});
  cx.figures["memory"].push_back({{"layout", "contiguous_cap"}, {"mean_reserved", c.memory.mean_capped},
                                  {"mean_written", c.memory.mean_written}, {"waste", c.memory.capped_waste()}});
  cx.figures["memory"].push_back({{"layout", "contiguous_own_length"}, {"mean_reserved", c.memory.mean_reserved},
                                  {"peak_reserved", c.memory.peak_reserved}, {"mean_written", c.memory.mean_written},
                                  {"waste", c.memory.waste()}, {"seconds", c.seconds}});
  for (const WorkloadRun& p : runs.paged) {
    const int same = same_tokens(p.requests, c.requests);
    t.add_row({p.layout, mb(p.memory.mean_reserved), mb(p.memory.peak_reserved), mb(p.memory.mean_written), cell::percent(p.memory.waste()),
               cell::secs(p.seconds), std::to_string(p.steps.size()), fmt::format("{} of {}", same, requests.size())});
    cx.figures["memory"].push_back({{"layout", p.layout}, {"mean_reserved", p.memory.mean_reserved},
                                    {"peak_reserved", p.memory.peak_reserved}, {"mean_written", p.memory.mean_written},
                                    {"waste", p.memory.waste()}, {"seconds", p.seconds}, {"identical_tokens", same}});
  }
  t.add_note(fmt::format("{} requests of chapter 04's workload (seeded log-normal lengths, capped at {}; {} new tokens in all), all "
                         "queued at time 0, continuous batching; {} of K and V per position.",
                         requests.size(), cx.s.max_len, total_new_tokens(requests), format_bytes(static_cast<double>(cx.bytes_per_token))));
  t.add_note("reserved: bytes the layout holds after each step (contiguous: the caches allocated; paged: blocks taken from the pool); "
             "written: positions the running sequences have stored × bytes per position; waste = 1 − written / reserved.");
  t.add_note(fmt::format("The first row is what a server must reserve when it cannot know an answer's length: prompt + {} − 1 "
                         "positions per running request (computed for the same steps). Chapter 04's BatchDecoder is told each "
                         "answer's length in advance, which no server is; it still reserves every position before it is written. "
                         "Paged runs: prefix caching off, so the gain is paging alone. The PagedAttention paper: 60–80% wasted in "
                         "contiguous systems, under 4% paged.",
                         cx.s.max_len));
  cx.emit(t);
  return runs;
}

}  // namespace infer::paging
