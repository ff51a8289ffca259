// bench_quant — chapter 06 part 2's performance targets (issue: quantized kernels). Prints the
// speed table of the packed kernels and whether each target is met; never fails.
//
//   1. Decode at context 128 on 2 threads: INT8 formats (int8, q8_0) ≥ 1.7× and 4-bit formats
//      (int4-g128, nf4, q4_1) ≥ 2.5× the tokens/s of fp32 decode.
//   2. Every format's weight streaming (bytes a decode step reads / step time) ≥ 60% of the
//      machine's measured read bandwidth. Beside it, the kernel alone with its weights in the
//      caches (kernel_in_cache_bytes_per_second): the most it could stream, which says whether
//      a miss is the kernel's or the memory's.
// fp32 and the packed models — the five formats with fp32 activations, and q8_0, q4_1 and nf4
// with int8 activations too (int8_activations.hpp; --activations chooses) — are timed in turn,
// round after round (kernel_speed.hpp), so a machine busy with something else slows them alike
// and the ratios stay comparable.
//
// tests/bench/compare_llama_cpp.py runs this binary once per round, between rounds of llama.cpp on
// the same files, with the flags below: --formats (which packed models besides fp32), --activations, --context,
// --prefill, --json (the figures), and once --check-packing (are our Q8_0 / Q4_1 bytes llama.cpp's?).
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "gguf/gguf_file.hpp"
#include "int8_activations.hpp"
#include "kernel_speed.hpp"
#include "layer_shapes.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "packed_kernels.hpp"
#include "quant_scheme.hpp"
#include "tensor/ops.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

std::string verdict(bool met) { return met ? "met" : "NOT met"; }

// Packs every Q8_0 or Q4_1 matrix of `other` the way our kernels would — the same-named tensor
// of `source` (the -m file) read as fp32, through scheme_for(format) — and compares the bytes
// with the file's. When `other` was quantized from `source` by llama.cpp, equal bytes mean that
// both engines multiply by exactly the same weights. Prints one line; returns the counts as JSON.
nlohmann::json check_packing(const gguf::GgufFile& source, const std::string& other_path) {
  const gguf::GgufFile other = gguf::GgufFile::open(other_path);
  int matrices = 0, equal = 0, other_types = 0;
  std::string first_difference;
  for (const gguf::TensorInfo& t : other.tensors()) {
    if (t.dims.size() != 2) continue;  // norms: vectors, kept in fp32 by both engines
    PackedFormat format;
    if (t.type == gguf::GgmlType::Q8_0)
      format = PackedFormat::q8_0;
    else if (t.type == gguf::GgmlType::Q4_1)
      format = PackedFormat::q4_1;
    else {
      ++other_types;  // a matrix llama.cpp kept in another type: we would pack it differently
      if (first_difference.empty()) first_difference = fmt::format("{} is not Q8_0 or Q4_1", t.name);
      continue;
    }
    ++matrices;
    const int64_t cols = static_cast<int64_t>(t.dims[0]), rows = static_cast<int64_t>(t.dims[1]);
    const std::vector<float> values = gguf::dequantize(source.tensor(t.name));  // [rows, cols] fp32
    const PackedMatrix ours = scheme_for(format)->quantize(values, rows, cols);
    if (ours.bytes.size() == t.n_bytes && std::memcmp(ours.bytes.data(), t.data, t.n_bytes) == 0)
      ++equal;
    else if (first_difference.empty())
      first_difference = fmt::format("{} differs", t.name);
  }
  fmt::print("{}: our packing of {} reproduces {} of its {} Q8_0/Q4_1 matrices byte for byte; "
             "{} matrices in other types{}\n", other_path, source.path(), equal, matrices, other_types,
             first_difference.empty() ? "" : " (first: " + first_difference + ")");
  return {{"file", other_path}, {"matrices", matrices}, {"equal", equal}, {"other_types", other_types},
          {"first_difference", first_difference}};
}

// The kernel alone with its weights in the cache: SmolLM2-135M's seven products of one layer
// (random weights packed by the scheme, one row of x), run over and over, so that after the
// first pass every weight comes from the caches (a packed layer is 1.2–2.2 MB, each thread's
// half fits its L2). What it streams then, in packed bytes per second, is the fastest a decode
// step could stream through this kernel however fast memory were: where it is below a
// bandwidth target, the kernel's instructions, not memory, keep the target out of reach.
double kernel_in_cache_bytes_per_second(PackedKernel k) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<PackedMatrix> layer;
  int64_t bytes = 0;
  for (const auto& [rows, cols] : bench::kLayer) {
    std::vector<float> w(static_cast<std::size_t>(rows * cols));
    for (float& v : w) v = normal(rng);
    layer.push_back(scheme_for(k.format)->quantize(w, rows, cols));
    bytes += std::ssize(layer.back().bytes);
  }
  std::vector<float> x(bench::kFfn), y(bench::kFfn);
  for (float& v : x) v = normal(rng) * 50;
  constexpr int kPasses = 20;  // per timed repeat
  const auto products = [&] {
    for (int pass = 0; pass < kPasses; ++pass)
      for (const PackedMatrix& m : layer)
        packed_matmul_cpu(k.format, m.bytes.data(), m.rows, m.cols, x.data(), 1, y.data(), k.activations);
  };
  products();  // into the caches
  return static_cast<double>(kPasses * bytes) / median_seconds(15, products);
}

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
  app.add_option("--context", s.context, "decode: tokens already in the cache")->check(CLI::Range(1, 8191))->capture_default_str();
  app.add_option("--prefill", s.prefill_tokens, "prefill: tokens in one pass")->check(CLI::Range(1, 8192))->capture_default_str();
  std::vector<std::string> format_flags;
  for (PackedFormat f : kPackedFormats) format_flags.push_back(format_flag(f));
  app.add_option("--formats", format_flags, "packed formats timed beside fp32, comma-separated")
      ->delimiter(',')->capture_default_str();
  std::vector<std::string> activation_flags = {"fp32", "int8"};
  app.add_option("--activations", activation_flags, "activations timed for each format, comma-separated: fp32, and int8 "
                 "for the formats with an int8-activation kernel (q8_0, q4_1, nf4)")
      ->delimiter(',')->check(CLI::IsMember({"fp32", "int8"}))->capture_default_str();
  std::vector<std::string> packing_files;
  app.add_option("--check-packing", packing_files, "only compare our packing of -m's matrices with FILE's Q8_0/Q4_1 "
                 "tensors (quantized from the same -m file, e.g. by llama.cpp), byte for byte, and exit")
      ->check(CLI::ExistingFile);
  return run_main(app, argc, argv, [&] {
    std::vector<PackedKernel> kernels;
    for (const std::string& flag : format_flags) {
      const std::optional<PackedFormat> f = parse_format_flag(flag);
      if (!f) throw UsageError(fmt::format("--formats: unknown scheme '{}' (int8, int4-g128, nf4, q8_0, q4_1)", flag));
      for (const std::string& a : activation_flags)
        if (a == "fp32")
          kernels.push_back({*f, Activations::fp32});
        else if (has_int8_activation_kernel(*f))
          kernels.push_back({*f, Activations::int8});
    }
    RunRecord record = new_record("bench_quant", o, "tables");  // --json: the figures below
    nlohmann::json& figures = record.figures;
    if (!packing_files.empty()) {
      check_common_options(o);
      const gguf::GgufFile source = gguf::GgufFile::open(o.model_path);
      for (const std::string& path : packing_files) figures["packing"].push_back(check_packing(source, path));
      save_record(record, o, nullptr);
      return;
    }
    LoadedModel m = load_model(o);
    BandwidthResult bw;  // timed in turn with the models
    const std::vector<SpeedRow> rows = measure_speed(m.model, m.tokenizer, kernels, s, bw);
    fmt::print("{} threads, read bandwidth {:.2f} GB/s (timed in the same rounds)\n\n", num_threads(), bw.bytes_per_second / 1e9);
    speed_figures(rows, s, bw, figures);
    const Table speed = speed_table(rows, s, bw);
    speed.print();
    speed.append_csv(o.csv_path);

    Table t(fmt::format("Targets: decode at context {}, {} threads", s.context, num_threads()),
            {"scheme", "activations", "decode speed-up", "speed-up target", "verdict", "of read bandwidth", "bandwidth target",
             "verdict", "kernel in cache"});
    const SpeedRow& base = rows[0];
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const SpeedRow& r = rows[i];
      const bool eight_bit = r.flag == "int8" || r.flag == "q8_0";
      const double speedup = base.decode_seconds / r.decode_seconds, need = eight_bit ? 1.7 : 2.5;
      const double fraction = static_cast<double>(r.bytes_per_token) / r.decode_seconds / bw.bytes_per_second;
      const double ceiling = kernel_in_cache_bytes_per_second(kernels[i - 1]) / bw.bytes_per_second;
      figures["kernel_in_cache"][r.flag + "/" + r.activations] = ceiling;
      t.add_row({r.scheme, r.activations, fmt::format("{:.2f}×", speedup), fmt::format("≥ {:.1f}×", need), verdict(speedup >= need),
                 fmt::format("{:.0f}%", 100 * fraction), "≥ 60%", verdict(fraction >= 0.60), fmt::format("{:.0f}%", 100 * ceiling)});
    }
    t.add_note("kernel in cache: the packed bytes per second the kernel alone multiplies with its weights in the caches (one "
               "layer's seven products, over and over), as a fraction of the read bandwidth: the most a decode step could "
               "stream through it. Where it is below the bandwidth target, the kernel's instructions, not memory, bound the step.");
    t.add_note("INT8 targets for int8 and q8_0 (8.0 and 8.5 bits/weight), 4-bit targets for int4-g128, nf4 and q4_1 "
               "(4.125, 4.25 and 5.0 bits/weight).");
    t.add_note(fmt::format("fp32 for reference: {:.0f}% of read bandwidth.",
                           100.0 * static_cast<double>(base.bytes_per_token) / base.decode_seconds / bw.bytes_per_second));
    t.print();
    t.append_csv(o.csv_path);
    save_record(record, o, nullptr);
  });
}
