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
// The tables, in the order printed (tables/: the studies; the layer is the directory above):
//   1  weight error of every scheme over every projection matrix, and the outlier statistics
//      of the worst and best matrix                                     (weight_error.cpp)
//   2  activation outliers after each layer, their histogram, INT8 with one tensor-wide
//      scale                                                            (activation_outliers.cpp)
//   3  quality per scheme, the battery with a repetition penalty, who answered what
//                                                                       (quality_tables.cpp)
//   --speed: decode and prefill through the kernels (kernel_speed.cpp), then what 8-bit
//   activations cost in quality (int8_quality.cpp); --memory: what fits (memory_budget.cpp).
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "activation_outliers.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "app/text_streamer.hpp"
#include "calibrated_int4.hpp"
#include "02_kv_cache/cached_generate.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "int8_activations.hpp"
#include "int8_quality.hpp"
#include "kernel_speed.hpp"
#include "measure/timing.hpp"
#include "memory_budget.hpp"
#include "quality_tables.hpp"
#include "quantize_model.hpp"
#include "tensor/ops.hpp"  // num_threads
#include "weight_error.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

// --quant: every matrix packed, the text generated with chapter 02's loop and chapter 03's
// cache, streamed as it comes.
void generate_quantized(LoadedModel& m, const CommonOptions& o, PackedFormat format, Activations activations,
                        RunRecord& record) {
  record.prompt_ids = encode_prompt(m, o);  // first: a prompt that does not fit is refused before the packing
  const QuantizedModel info = quantize_for_kernels(m.model, format, activations);
  fmt::print(stderr, "packed every matrix as {} ({:.3f} bits/weight): the weights now take {}, in {:.1f} s; {} activations\n",
             info.scheme, info.bits_per_weight(), format_bytes(m.model.weights().bytes_held()), info.seconds,
             activations_name(activations));
  GroupedKvCache cache(m.model.config(), std::ssize(record.prompt_ids) + o.n_predict, m.model.device());
  Sampler sampler(o.sampling);
  sampler.accept(record.prompt_ids);  // --repeat-penalty counts the prompt too, as llama.cpp does
  TextStreamer stream(m.tokenizer, record.text);
  std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
  std::fflush(stdout);
  const GenerateOptions options{.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5};
  const Generation gen = generate_cached(m.model, m.tokenizer, record.prompt_ids, cache, sampler, options, std::ref(stream));
  stream.finish();
  record.steps = gen.steps;
  std::vector<double> decode;
  for (std::size_t i = 1; i < gen.steps.size(); ++i) decode.push_back(gen.steps[i].seconds);
  const double ttft = gen.steps.empty() ? 0 : gen.steps[0].seconds;
  const double tps = decode.empty() ? 0 : 1.0 / median(decode);
  fmt::print("{} tokens through the {} kernels, {} activations ({} threads): time to first token {:.1f} ms, decode {:.1f} tokens/s "
             "(median step)\n", gen.steps.size(), info.scheme, activations_name(activations), num_threads(), 1e3 * ttft, tps);
  record.figures["quant"] = {{"scheme", info.scheme}, {"flag", format_flag(format)},
                             {"activations", activations_name(activations)}, {"bits_per_weight", info.bits_per_weight()},
                             {"weight_bytes", m.model.weights().bytes_held()}, {"ttft_s", ttft}, {"decode_tokens_per_s", tps}};
}

}  // namespace

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
  app.add_option("--eval-tokens", q.eval_tokens, "tokens of held-out text for perplexity")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--window", q.window, "tokens per perplexity window (each starts with an empty cache)")
      ->check(whole_number(2, int64_t{1} << 30))->capture_default_str();
  app.add_option("--agree-tokens", q.agree_tokens, "greedy tokens per agreement prompt (3 prompts)")
      ->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--answer-tokens", q.answer_tokens, "greedy tokens per battery answer")
      ->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--battery-penalty", q.battery_penalty, "repetition penalty of the battery's second run (1.1: the "
                 "course model's own)")->check(real_number(0, 100, /*min_exclusive=*/true))->capture_default_str();
  app.add_option("--calib-tokens", q.calib_tokens, "calibration tokens, the text before the held-out slice (SmoothQuant; with --calibrated AWQ and GPTQ)")
      ->check(whole_number(1, 8192))->capture_default_str();
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
      // What the int8-activation rows cost in quality (--eval-tokens, --window).
      const std::vector<Int8QualityRow> rows = measure_int8_quality(m, q.eval_tokens, q.window);
      int8_quality_table(rows, q.window).emit(o.csv_path);
      for (const Int8QualityRow& r : rows)
        record.figures["int8_quality"].push_back({{"scheme", r.scheme}, {"perplexity_fp32", r.perplexity_fp32},
                                                  {"perplexity_int8", r.perplexity_int8}, {"agreement", r.agreement},
                                                  {"positions", r.positions}, {"window", q.window}});
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
