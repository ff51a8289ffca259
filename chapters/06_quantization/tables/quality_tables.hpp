// Chapter 06's study: the quality table — the model quantized in place by every scheme (and
// with 8-bit activations: plain, with SmoothQuant, with LLM.int8's outlier columns), each scored
// by perplexity on held-out text, a battery of short questions (without and with a repetition
// penalty) and agreement with the fp32 model's greedy answers.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"

namespace infer::quant {

struct QualityOptions {
  int64_t eval_tokens = 2048;
  int64_t window = 512;
  int agree_tokens = 48;    // greedy tokens per agreement prompt
  int answer_tokens = 24;   // greedy tokens per battery answer
  // The battery's second run: the repetition penalty the course's model ships with (its
  // generation_config.json: 1.1), over llama.cpp's default window of 64 tokens.
  float battery_penalty = 1.1f;
  int64_t calib_tokens = 512;  // SmoothQuant's calibration pass: the end of the text before the held-out slice
};

// The printed tables: quality per scheme, the battery without and with the penalty, and who
// answered each question. Needs the evaluation text and data/questions.tsv; leaves the model as
// it came (fp32).
void quality_tables(LoadedModel& m, const CommonOptions& o, const QualityOptions& q, nlohmann::json& figures);

}  // namespace infer::quant
