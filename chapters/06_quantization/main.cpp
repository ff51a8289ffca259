// ch06_quantization — weight quantization schemes and what they cost in quality; then the model
// on kernels that multiply straight from the packed bytes.
//
//   ch06_quantization                      every table: weight error, activation outliers, quality
//   ch06_quantization --eval-tokens 4096   perplexity over more of the held-out text
//   ch06_quantization --no-quality         only the weight and activation tables (no text needed)
//   ch06_quantization --csv out.csv --json out.json
//   ch06_quantization --quant nf4 -p "..." -n 64   part 2: generate through the packed kernels
//   ch06_quantization --quant q4_1 --int8-activations   … with x rounded to int8 too (decode)
//   ch06_quantization --speed -t 2                 part 2: the speed table of the kernels
//   ch06_quantization --memory                     part 2: what fits on 8/16/24 GB cards and in this RAM
//   ch06_quantization --calibrated                 INT4 g128 calibrated on text: AWQ and GPTQ (calibrated_int4.cpp)
//
// The tables, in the order printed (tables/: the studies; the layer is the directory above, part 2's
// in packed/):
//   1  weight error of every scheme over every projection matrix, and the outlier statistics
//      of the worst and best matrix                                     (weight_error.cpp)
//   2  activation outliers after each layer, their histogram, INT8 with one tensor-wide
//      scale                                                            (activation_outliers.cpp)
//   3  quality per scheme, the battery with a repetition penalty, who answered what
//                                                                       (quality_tables.cpp)
//   --speed: decode and prefill through the kernels (kernel_speed.cpp), then what 8-bit
//   activations cost in quality (int8_quality.cpp); --memory: what fits (memory_budget.cpp).
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "activation_outliers.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "calibrated_int4.hpp"
#include "int8_activations.hpp"
#include "int8_quality.hpp"
#include "kernel_speed.hpp"
#include "memory_budget.hpp"
#include "quality_tables.hpp"
#include "quantized_generation.hpp"
#include "quantize_model.hpp"
#include "weight_error.hpp"

using namespace infer;
using namespace infer::quant;

// The flags each mode leaves unused, refused when given (refuse_flags).
const std::initializer_list<std::string_view> kGenerationFlags = {"--prompt", "--n-predict", "--chat", "--seed",
                                                                  "--temp", "--top-k", "--top-p", "--repeat-penalty",
                                                                  "--repeat-last-n"};
const std::initializer_list<std::string_view> kQualityFlags = {"--eval-tokens", "--window", "--agree-tokens",
                                                               "--answer-tokens", "--no-quality", "--battery-penalty",
                                                               "--calib-tokens"};

int main(int argc, char** argv) {
  CLI::App app{"Chapter 06: weight quantization schemes and what they cost in quality"};
  CommonOptions o;
  QualityOptions q;
  bool no_quality = false;
  add_common_options(app, o);
  add_quality_options(app, q);
  app.add_flag("--no-quality", no_quality, "skip the quality table (no evaluation text needed)");
  std::string quant;
  bool speed = false;
  SpeedOptions speed_options;
  auto* quant_opt = app.add_option("--quant", quant, "part 2: pack every matrix in SCHEME (int8, int4-g128, nf4, q8_0, q4_1) "
                                                     "and generate through the kernels (-p, -n, --chat, sampling)");
  bool int8_activations = false;
  app.add_flag("--int8-activations", int8_activations, "with --quant q8_0, q4_1 or nf4: round x to int8 too and multiply "
               "with integer dot products in decode, as llama.cpp does (lossy; see the README)")->needs(quant_opt);
  auto* speed_opt = app.add_flag("--speed", speed, "part 2: the speed table of the kernels (decode and prefill, fp32 and every scheme), then "
                                          "what int8 activations cost in perplexity (--eval-tokens, --window)")
                        ->excludes(quant_opt);
  app.add_option("--rounds", speed_options.rounds, "--speed: rounds of timing (each model timed once per round)")
      ->check(whole_number(1, 1000))->capture_default_str();
  bool memory = false;
  app.add_flag("--memory", memory, "part 2: what fits — weights, context and users for 7B/13B/70B on 8/16/24 GB "
                                   "cards, and for this model in this machine's RAM (no model run)")
      ->excludes(quant_opt)->excludes(speed_opt);
  bool calibrated = false;
  app.add_flag("--calibrated", calibrated, "only the table of INT4 g128 calibrated on text: AWQ and GPTQ beside INT4 "
               "g128 and NF4 (the quality flags apply)")->excludes(quant_opt)->excludes(speed_opt)->excludes("--memory");

  return run_main(app, argc, argv, [&] {
    if (memory) {
      refuse_flags(app, "--memory", kGenerationFlags);
      refuse_flags(app, "--memory", kQualityFlags);
      refuse_flags(app, "--memory", {"--rounds", "--threads", "--device"});
      check_common_options(o);
      RunRecord record = new_record("ch06_quantization", o, "tables");
      memory_tables(o, record.figures);
      save_record(record, o, nullptr);
      return;
    }
    if (!quant.empty()) {
      refuse_flags(app, "--quant", kQualityFlags);
      refuse_flags(app, "--quant", {"--rounds"});
      const std::optional<PackedFormat> format = parse_format_flag(quant);
      if (!format) throw UsageError(fmt::format("--quant: unknown scheme '{}' (int8, int4-g128, nf4, q8_0, q4_1)", quant));
      if (int8_activations && !has_int8_activation_kernel(*format))
        throw UsageError(fmt::format("--int8-activations: no int8-activation kernel for {} (q8_0, q4_1, nf4)", quant));
      if (o.prompt.empty()) o.prompt = "The three most important ideas in computer science are";
      LoadedModel m = load_model(o);
      RunRecord record = new_record("ch06_quantization", o);
      generate_quantized(m, o, *format, int8_activations ? Activations::int8 : Activations::fp32, record);
      save_record(record, o, &m.tokenizer);
      return;
    }
    if (speed) {
      refuse_flags(app, "--speed", kGenerationFlags);
      refuse_flags(app, "--speed", {"--agree-tokens", "--answer-tokens", "--no-quality", "--battery-penalty", "--calib-tokens"});
      LoadedModel m = load_model(o);
      if (q.window > m.model.config().context_length)
        throw UsageError(fmt::format("--window {} exceeds the context length {}", q.window, m.model.config().context_length));
      RunRecord record = new_record("ch06_quantization", o, "tables");
      speed_tables(m, o, speed_options, record.figures);
      int8_quality_section(m, q.eval_tokens, q.window, o, record.figures);  // what int8 activations cost in quality
      save_record(record, o, nullptr);
      return;
    }
    refuse_flags(app, "the tables (without --quant)", kGenerationFlags);
    refuse_flags(app, "the tables (without --speed)", {"--rounds"});
    if (no_quality)
      refuse_flags(app, "--no-quality", {"--eval-tokens", "--window", "--agree-tokens", "--answer-tokens",
                                         "--battery-penalty", "--calib-tokens"});
    if (calibrated) refuse_flags(app, "--calibrated", {"--no-quality", "--battery-penalty"});
    LoadedModel m = load_model(o);
    if (q.window > m.model.config().context_length)
      throw UsageError(fmt::format("--window {} exceeds the context length {}", q.window, m.model.config().context_length));
    RunRecord record = new_record("ch06_quantization", o, "tables");
    if (calibrated) {
      calibrated_int4_table(m, o, q, record.figures);
    } else {
      record.prompt = kOutlierPrompt;
      weight_error_tables(m.model, o, record.figures);
      activation_tables(m.model, m.tokenizer, o, record.figures);
      if (!no_quality) quality_tables(m, o, q, record.figures);
    }
    save_record(record, o, nullptr);
  });
}
