// Chapter 06's study: the quality table — the model quantized in place by every scheme (and
// with 8-bit activations: plain, with SmoothQuant, with LLM.int8's outlier columns), each scored
// by perplexity on held-out text, a battery of short questions (without and with a repetition
// penalty) and agreement with the fp32 model's greedy answers. Its row machinery (quality_bench,
// measure_quality, quality_table) also measures the calibrated INT4 rows (calibrated_int4.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agreement.hpp"
#include "app/cli.hpp"
#include "eval/evaluation.hpp"
#include "measure/table.hpp"
#include "quantize_model.hpp"
#include "question_battery.hpp"

namespace infer::quant {

struct QualityOptions {
  int64_t eval_tokens = 2048;
  int64_t window = 512;
  int agree_tokens = 48;    // greedy tokens per agreement prompt
  int answer_tokens = 24;   // greedy tokens per battery answer
  // The battery's second run: the repetition penalty the course's model ships with (its
  // generation_config.json: 1.1), over llama.cpp's default window of 64 tokens.
  float battery_penalty = 1.1f;
  int64_t calib_tokens = 512;  // the calibration pass (SmoothQuant, AWQ, GPTQ): the end of the text before the held-out slice
};

// --eval-tokens, --window, --agree-tokens, --answer-tokens, --battery-penalty, --calib-tokens.
void add_quality_options(CLI::App& app, QualityOptions& q);

// What every row is measured on, prepared once: the held-out tokens, the questions, the fp32
// model's greedy answers (agreement), the fp32 weights, and the calibration tokens — the last
// `calib_tokens` before the held-out slice (the end of Judges), so that no calibrated method
// sees the text it is evaluated on.
struct QualityBench {
  std::vector<int32_t> tokens;
  std::vector<Question> questions;
  GreedyReference greedy;
  ReferenceWeights reference;
  std::vector<int32_t> calibration;
};
QualityBench quality_bench(LoadedModel& m, const QualityOptions& q);

// One row: a way to put the model's weights into a state (returns what it did), and what that
// model then scored.
using QualityRow = std::function<QuantizedModel()>;
struct QualityResult {
  QuantizedModel info;
  TextEvaluation text;
  BatteryResult battery, battery_penalized;  // battery_penalized: empty unless asked for
  AgreementCount agree;
  double seconds = 0;  // applying the row and measuring it
};
// Applies each row in turn and measures it (perplexity, battery, agreement; with
// `penalized_battery` the battery again with q.battery_penalty), then leaves the model fp32.
std::vector<QualityResult> measure_quality(LoadedModel& m, const QualityBench& bench, const QualityOptions& q,
                                           const std::vector<QualityRow>& rows, bool penalized_battery);

// A column a table adds after "weights": its header and one cell per result.
struct QualityColumn {
  std::string header;
  std::vector<std::string> cells;
};
// The quality table of `results` (the first is fp32, the baseline), titled "{what} (positions,
// questions, agreement positions)", with the notes every such table needs; adds one record per
// row to `figures` (a JSON array).
Table quality_table(std::string_view what, const std::vector<QualityResult>& results, const QualityBench& bench,
                    const QualityOptions& q, const std::vector<QualityColumn>& extra, nlohmann::json& figures);

// The printed tables: quality per scheme, the battery without and with the penalty, and who
// answered each question. Needs the evaluation text and data/questions.tsv; leaves the model as
// it came (fp32).
void quality_tables(LoadedModel& m, const CommonOptions& o, const QualityOptions& q, nlohmann::json& figures);

}  // namespace infer::quant
