// ch04_batching — many requests per step: the batch-size knee, static vs continuous batching,
// and the course's latency/throughput model.
//
//   ch04_batching                          everything below on the default model (~3 min, 2 cores)
//   ch04_batching --requests 16            a smaller workload (the real runs dominate the time)
//   ch04_batching --gap-steps 0            every request arrives at time 0 (one burst)
//   ch04_batching --skip-real              the workload only simulated, from the measured sweep
//   ch04_batching --csv t.csv --json r.json --plot p.svg   (default plot: ./ch04_throughput_vs_latency.svg)
//
// The tables, in the order printed:
//   1  the batch sweep: B sequences, each with a 64-token cache, decode one token together
//   2  the analytic model beside it: intensities, bytes and FLOPs per step, modelled latency
//   3  the skewed workload, 8 slots, static vs continuous: real runs and the simulation
//   4  a few requests of the workload: why a finished request must leave at once
//   5  arithmetic intensity in prefill and decode, beside a plain matrix product
//   6  the course's worked example, Llama-2-13B on an H100, from its parameters
//   7  replicas or one model split over several cards, from the same model
// (tables/: the studies; the layer is the directory above.)
#include <fmt/format.h>

#include "analytic_tables.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "measure/bandwidth.hpp"
#include "batch_sweep.hpp"
#include "tensor/ops.hpp"
#include "workload_runs.hpp"

using namespace infer;
using namespace infer::batching;

int main(int argc, char** argv) {
  CLI::App app{"Chapter 04: batching — the batch-size knee, static vs continuous batching, the latency/throughput model"};
  CommonOptions o;
  Settings s;
  s.plot_path = "ch04_throughput_vs_latency.svg";  // in the working directory, never over docs/
  add_common_options(app, o, PromptFlags::absent);  // the workload brings its own prompts
  app.add_option("--slots", s.slots, "batch slots for the workload (static batch size, continuous slots)")
      ->check(whole_number(1, 64))->capture_default_str();
  app.add_option("--requests", s.requests, "requests in the workload (the real runs take most of the time)")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--gap-steps", s.gap_steps, "mean gap between arrivals, in full-batch decode steps (0: all at time 0)")
      ->check(real_number(0.0, 1e6))->capture_default_str();
  app.add_option("--cached", s.cached, "cache length of every sequence in the batch sweep")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--repeats", s.repeats, "timed repeats per measurement (the median is reported)")
      ->check(whole_number(1))->capture_default_str();
  app.add_flag("--skip-real", s.skip_real, "simulate the workload only (no real runs)");
  app.add_option("--plot", s.plot_path, "SVG file for the throughput-vs-latency plot (empty: none)")->capture_default_str();
  bool analytic_only = false;
  app.add_flag("--analytic-only", analytic_only, "only tables 5–7, the course's formulas (no model run; the machine is measured)");

  return run_main(app, argc, argv, [&] {
    if (analytic_only) {
      refuse_flags(app, "--analytic-only", {"--model", "--device", "--slots", "--requests", "--gap-steps", "--cached", "--skip-real", "--plot"});
      check_output_path(o.json_path, "--json");  // no model file needed
      check_output_path(o.csv_path, "--csv");
      RunRecord record = new_record("ch04_batching", o, "tables");
      const BandwidthResult bw = measure_read_bandwidth();
      intensity_table({"this machine", bw.bytes_per_second, measure_peak_flops(s.repeats), 0}, o, record.figures);
      worked_example(o, record.figures);
      parallel_table(o, record.figures);
      save_record(record, o, nullptr);
      return;
    }
    check_output_path(s.plot_path, "--plot");
    const int context = read_model_config(o).context_length;  // from the metadata, before the weights load
    if (s.cached + 1 > context) throw UsageError(fmt::format("--cached {} leaves no room in the context of {}", s.cached, context));
    LoadedModel m = load_model(o);
    RunRecord record = new_record("ch04_batching", o, "tables");

    const BandwidthResult bw = measure_read_bandwidth();
    const double peak = measure_peak_flops(s.repeats);
    Context cx{{m, o, record.figures, machine_line(bw)}, s, Machine{"this machine", bw.bytes_per_second, peak, 0}};
    record.figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second},
                                 {"sgemm_flops_per_s", peak}};

    const std::vector<SweepPoint> sweep = batch_sweep(cx, {1, 2, 4, 8, 16, 32, 64});
    sweep_table(cx, sweep);
    const std::vector<StepModel> model = model_table(cx, sweep);
    workload_tables(cx, sweep);
    intensity_table(cx.machine, o, record.figures);
    worked_example(o, record.figures);
    parallel_table(o, record.figures);
    write_plot(cx, sweep, model);
    save_record(record, o, nullptr);
  });
}
