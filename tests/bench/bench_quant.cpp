// bench_quant — chapter 06 part 2's performance targets (issue: quantized kernels). Prints the
// speed table of the packed kernels and whether each target is met; never fails.
//
//   1. Decode at context 128 on 2 threads: INT8 formats (int8, q8_0) ≥ 1.7× and 4-bit formats
//      (int4-g128, nf4, q4_1) ≥ 2.5× the tokens/s of fp32 decode.
//   2. Every format's weight streaming (bytes a decode step reads / step time) ≥ 60% of the
//      machine's measured read bandwidth.
// fp32 and the five packed models are timed in turn, round after round (kernel_speed.hpp), so a
// machine busy with something else slows them alike and the ratios stay comparable.
#include <fmt/format.h>

#include "app/cli.hpp"
#include "kernel_speed.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "tensor/ops.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

std::string verdict(bool met) { return met ? "met" : "NOT met"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Benchmark: chapter 06's packed kernels — decode speed-up over fp32 and weight streaming vs bandwidth"};
  CommonOptions o;
  o.threads = 2;
  SpeedOptions s;
  s.rounds = 5;
  add_common_options(app, o);
  app.add_option("--rounds", s.rounds, "rounds of timing (each model timed once per round)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--steps", s.decode_steps, "decode steps timed per model per round")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  return run_main(app, argc, argv, [&] {
    LoadedModel m = load_model(o);
    const BandwidthResult bw = measure_read_bandwidth();
    fmt::print("{} threads, measured read bandwidth {:.2f} GB/s\n\n", num_threads(), bw.bytes_per_second / 1e9);
    const std::vector<SpeedRow> rows =
        measure_speed(m.model, m.tokenizer, std::vector<PackedFormat>(kPackedFormats.begin(), kPackedFormats.end()), s);
    const Table speed = speed_table(rows, s, bw);
    speed.print();
    speed.append_csv(o.csv_path);

    Table t(fmt::format("Targets: decode at context {}, {} threads", s.context, num_threads()),
            {"scheme", "decode speed-up", "speed-up target", "verdict", "of read bandwidth", "bandwidth target", "verdict"});
    const SpeedRow& base = rows[0];
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const SpeedRow& r = rows[i];
      const bool eight_bit = r.flag == "int8" || r.flag == "q8_0";
      const double speedup = base.decode_seconds / r.decode_seconds, need = eight_bit ? 1.7 : 2.5;
      const double fraction = static_cast<double>(r.bytes_per_token) / r.decode_seconds / bw.bytes_per_second;
      t.add_row({r.scheme, fmt::format("{:.2f}×", speedup), fmt::format("≥ {:.1f}×", need), verdict(speedup >= need),
                 fmt::format("{:.0f}%", 100 * fraction), "≥ 60%", verdict(fraction >= 0.60)});
    }
    t.add_note("INT8 targets for int8 and q8_0 (8.0 and 8.5 bits/weight), 4-bit targets for int4-g128, nf4 and q4_1 "
               "(4.125, 4.25 and 5.0 bits/weight).");
    t.add_note(fmt::format("fp32 for reference: {:.0f}% of read bandwidth.",
                           100.0 * static_cast<double>(base.bytes_per_token) / base.decode_seconds / bw.bytes_per_second));
    t.print();
    t.append_csv(o.csv_path);
  });
}
