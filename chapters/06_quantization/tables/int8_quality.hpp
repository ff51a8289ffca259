// Chapter 06's study: what 8-bit activations cost (int8_activations.hpp).
//
// The speed table shows that rounding x to int8 buys decode speed for q8_0, q4_1 and nf4. This
// table shows what it costs: for each of those formats, the same packed weights multiplied once
// with fp32 activations and once with int8 ones, scored on the held-out text by
//
//   perplexity        of each, and the relative change int8 − fp32
//   agreement         the fraction of positions where both choose the same most likely next token
//
// The text is fed 16 tokens per forward call, so that every matrix product has n = 16 < 32 rows of
// x — the decode-sized products the int8 kernels serve (a 512-token pass would take the fp32
// panels instead, and compare the fp32 path with itself).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "measure/table.hpp"

namespace infer::quant {

struct Int8QualityRow {
  std::string scheme;
  double perplexity_fp32 = 0, perplexity_int8 = 0;
  double agreement = 0;  // same greedy token, fraction of positions
  int64_t positions = 0;
};

// The rows for q8_0, q4_1 and nf4 on the first `eval_tokens` tokens of the held-out text (windows of
// `window` tokens, 16 per call). Needs the evaluation text; leaves the model as it came.
std::vector<Int8QualityRow> measure_int8_quality(LoadedModel& m, int64_t eval_tokens, int64_t window);
Table int8_quality_table(const std::vector<Int8QualityRow>& rows, int64_t window);
// Both: the rows measured, the table printed (and written to --csv), the rows in figures["int8_quality"].
void int8_quality_section(LoadedModel& m, int64_t eval_tokens, int64_t window, const CommonOptions& o, nlohmann::json& figures);

}  // namespace infer::quant
