// bench_batching — chapter 04's performance targets (issue: chapter 04). Prints figures and
// whether each target is met; never fails.
//
//   1. Throughput at B = 16 at least 4× throughput at B = 1 (one-token decode steps, every
//      sequence with a 64-token cache); the performance issue asks for 6× (the course's ×6.0)
//      and a step of B = 4 at most 1.3× a step of B = 1.
//   2. On the skewed workload (64 requests, 8 slots, Poisson arrivals 3 full-batch steps apart on
//      average): continuous batching at least 1.5× the throughput of static batching and at
//      least 5× better mean latency — real runs, with the simulation beside them.
//      The course reports 1.6× and over 10×.
#include <fmt/format.h>

#include "app/cli.hpp"
#include "batch_decode.hpp"
#include "measure/table.hpp"
#include "simulate.hpp"
#include "tensor/ops.hpp"
#include "workload.hpp"

using namespace infer;

namespace {

std::string verdict(bool met) { return met ? "met" : "NOT met"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: chapter 04's batch-size gain and continuous vs static batching"};
  CommonOptions o;
  o.threads = 2;
  // 21 rounds, one step of every B per round: with 7 the B = 16 ÷ B = 1 verdict moved between
  // 5.64× and 6.12× from one run to the next on a 2-core machine (the line is 6×).
  int repeats = 21, requests = 64, slots = 8;
  double gap_steps = 3;
  bool simulate_only = false;
  add_common_options(app, o);
  app.add_option("--repeats", repeats, "timed repeats (median reported)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--requests", requests, "requests in the workload")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--slots", slots, "batch slots")->check(CLI::Range(1, 16))->capture_default_str();
  app.add_option("--gap-steps", gap_steps, "mean arrival gap in full-batch steps (0: all at once)")
      ->check(CLI::Range(0.0, 1e6))->capture_default_str();
  app.add_flag("--simulate-only", simulate_only, "benchmark 2 on the cost model only (the real runs take ~1.5 min)");
  return run_main(app, argc, argv, [&] {
    LoadedModel m = load_model(o);
    const std::vector<int32_t> text = m.tokenizer.encode(
        "Benchmarks measure what the machine does, not what we hope it does; a median of several "
        "runs keeps one slow run from deciding the answer. ");
    const std::vector<DecodeTiming> sweep = time_batched_decode(m.model, text, {1, 2, 4, 8, 16}, 64, repeats);
    const double gain = sweep.back().throughput() / sweep.front().throughput();
    Table t1(fmt::format("1. Decode step, B sequences with a 64-token cache each, {} threads, median of {}", num_threads(), repeats),
             {"B", "step (ms)", "tokens/s", "× B=1"});
    for (const DecodeTiming& d : sweep)
      t1.add_row({std::to_string(d.batch), fmt::format("{:.1f}", d.seconds * 1e3), fmt::format("{:.1f}", d.throughput()),
                  fmt::format("{:.2f}×", d.throughput() / sweep.front().throughput())});
    const double step4 = sweep[2].seconds / sweep.front().seconds;
    t1.add_note(fmt::format("targets: throughput at B = 16 ≥ 4× B = 1 (chapter 04), ≥ 6× (performance issue; the course's "
                            "×6.0): {:.2f}× — {}, {}", gain, verdict(gain >= 4), verdict(gain >= 6)));
    t1.add_note(fmt::format("target (performance issue): step(B = 4) ÷ step(B = 1) ≤ 1.3: {:.2f} — {}", step4, verdict(step4 <= 1.3)));
    t1.print();
    t1.append_csv(o.csv_path);

    const StepCostModel cost = cost_model_from(sweep);
    WorkloadOptions wo;
    wo.requests = requests;
    wo.mean_gap = gap_steps * cost(slots);
    const std::vector<Request> work = make_workload(m.tokenizer, wo);
    Table t2(fmt::format("2. Skewed workload: {} requests, {} slots, mean arrival gap {:.0f} ms", requests, slots, wo.mean_gap * 1e3),
             {"run", "static tokens/s", "continuous tokens/s", "throughput ratio", "static mean latency (s)",
              "continuous mean latency (s)", "latency improvement", "throughput ≥ 1.5×", "latency ≥ 5×"});
    const auto row = [&](const std::string& name, const ServeSummary& a, const ServeSummary& b) {
      const double thr = b.throughput / a.throughput, lat = a.mean_latency / b.mean_latency;
      t2.add_row({name, fmt::format("{:.1f}", a.throughput), fmt::format("{:.1f}", b.throughput), fmt::format("{:.2f}×", thr),
                  fmt::format("{:.2f}", a.mean_latency), fmt::format("{:.2f}", b.mean_latency), fmt::format("{:.2f}×", lat),
                  verdict(thr >= 1.5), verdict(lat >= 5)});
    };
    if (!simulate_only) {
      ServeSummary real[2];
      for (Policy p : {Policy::static_batches, Policy::continuous}) {
        BatchDecoder decoder(m.model, o.sampling);
        WallClock clock;
        real[p == Policy::continuous] = serve(p, work, slots, decoder, clock).summary;
      }
      row("real", real[0], real[1]);
    }
    row("simulated", simulate(Policy::static_batches, work, slots, cost).summary,
        simulate(Policy::continuous, work, slots, cost).summary);
    t2.add_note("targets (the real run when there is one): continuous ≥ 1.5× static throughput and ≥ 5× better mean latency; "
                "the course: 1.6× and over 10×.");
    t2.print();
    t2.append_csv(o.csv_path);
  });
}
