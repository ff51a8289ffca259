// ch05_paged_blocks — the K/V cache in fixed-size blocks: the memory it recovers, the sequences
// that then fit, the prefill a shared prefix saves, samples that share a prompt, block size.
//
//   ch05_paged_blocks                       everything below on the default model (~5 min on 2 idle cores)
//   ch05_paged_blocks --requests 64         chapter 04's whole workload (the real runs dominate)
//   ch05_paged_blocks --system-tokens 400 --prefix-requests 64
//   ch05_paged_blocks --csv t.csv --json r.json
//
// The tables, in the order printed (tables/, one file each; the lesson is the directory above):
//   1  memory_table      chapter 04's workload: KV memory reserved vs written, contiguous and paged (8, 16, 32)
//   2  budget_table      one fixed memory budget: how many sequences run at once, contiguous vs paged
//   3  prefix_table      a 200-token system prompt shared by 32 requests: prefill and memory, cold vs shared
//   4  samples_table     4 samples of one prompt: forked (shared blocks, copy-on-write) vs independent
//   5  block_size_table  block size: waste against step time
//   6  fragmentation_table  table 2's budget as one arena: holes too small for the next request (first fit) vs blocks
//   7  block_trace       a short run on 24 blocks of 4, step by step: who holds each block (figures.block_trace in --json)
// Tables 1, 2, 5 and 6 measure part 1 of the lesson (paging); tables 3 and 4 part 2 (sharing); table 7 shows both.
#include <fmt/format.h>

#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "block_size_table.hpp"
#include "block_trace.hpp"
#include "budget_table.hpp"
#include "fragmentation_table.hpp"
#include "measure/bandwidth.hpp"
#include "memory_table.hpp"
#include "prefix_table.hpp"
#include "samples_table.hpp"
#include "tensor/ops.hpp"
#include "04_batching/workload/workload.hpp"

using namespace infer;
using namespace infer::paging;

int main(int argc, char** argv) {
  CLI::App app{"Chapter 05: paged KV blocks — block tables, prefix sharing, copy-on-write, admission by free blocks"};
  CommonOptions o;
  Settings s;
  add_common_options(app, o, PromptFlags::absent);  // the workload brings its own prompts
  app.add_option("--requests", s.requests, "requests of chapter 04's workload in tables 1, 2, 5 and 6 (64: all of it)")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--slots", s.slots, "batch slots of the contiguous runs (and sequences in the timed step)")
      ->check(whole_number(1, 64))->capture_default_str();
  app.add_option("--block-size", s.block_size, "positions per block in tables 2, 3 and 4")
      ->check(whole_number(1, 8192))->capture_default_str();
  app.add_option("--max-len", s.max_len, "the server's cap on new tokens, which a contiguous cache reserves")
      ->check(whole_number(1, 8192))->capture_default_str();
  app.add_option("--budget-mib", s.budget_mib, "table 2's K/V budget in MiB (0: what --slots contiguous reservations need)")
      ->check(real_number(0.0, 1e6))->capture_default_str();
  app.add_option("--system-tokens", s.system_tokens, "length of table 3's shared system prompt")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--prefix-requests", s.prefix_requests, "requests sharing the system prompt")
      ->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--prefix-new", s.prefix_new, "new tokens per request in table 3")->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--samples", s.samples, "samples of one prompt in table 4")->check(whole_number(1, 64))->capture_default_str();
  app.add_option("--sample-tokens", s.sample_tokens, "new tokens per sample")->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--sample-temp", s.sample_temp, "sampling temperature in tables 4 and 7")->check(real_number(0.0, 10.0))->capture_default_str();
  app.add_option("--cached", s.cached, "cache length of each sequence in table 5's timed step")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--repeats", s.repeats, "timed repeats per step time (the median is reported)")
      ->check(whole_number(1))->capture_default_str();
  app.add_option("--budget-runs", s.budget_runs, "runs of each layout in table 2, in turn (the median time is reported)")
      ->check(whole_number(1, 100))->capture_default_str();

  return run_main(app, argc, argv, [&] {
    const int context = read_model_config(o).context_length;  // from the metadata, before the weights load
    if (s.cached + 1 > context) throw UsageError(fmt::format("--cached {} leaves no room in the context of {}", s.cached, context));
    LoadedModel m = load_model(o);
    const LlamaConfig& c = m.model.config();
    RunRecord record = new_record("ch05_paged_blocks", o, "tables");
    const BandwidthResult bw = measure_read_bandwidth();
    const Context cx{{m, o, record.figures, machine_line(bw)}, s, c.kv_bytes_per_token(sizeof(float))};
    record.figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second}};

    WorkloadOptions wo;
    wo.requests = s.requests;
    wo.max_tokens = s.max_len;
    const std::vector<Request> requests = make_workload(m.tokenizer, wo);
    const Budget budget = fixed_budget(cx, requests);

    const WorkloadRuns runs = memory_table(cx, requests);
    budget_table(cx, requests, budget, runs.contiguous);
    prefix_table(cx);
    samples_table(cx);
    block_size_table(cx, runs);
    fragmentation_table(cx, requests, budget);
    block_trace_table(cx);
    save_record(record, o, nullptr);
  });
}
