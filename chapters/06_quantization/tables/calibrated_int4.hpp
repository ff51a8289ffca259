// Chapter 06's study: INT4 g128 calibrated on text. Plain INT4 g128 rounds every weight to the
// nearest level on its own; AWQ (awq.hpp) and GPTQ (gptq.hpp) use one calibration pass over the
// text before the held-out slice to round the same matrices, in the same 4.125-bit format, so
// that the layers' outputs move less. The table sets them beside plain INT4 g128 and NF4 (the
// best 4-bit row of the quality table), measured by the quality table's own machinery
// (quality_tables.hpp), with two columns of their own: the weight error every scheme is judged by
// in table 1, and the output error on the calibration inputs, which is what AWQ and GPTQ minimise.
#pragma once

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "quality_tables.hpp"

namespace infer::quant {

// The printed table (ch06_quantization --calibrated). Needs the evaluation text and
// data/questions.tsv; leaves the model as it came (fp32). Adds figures["calibrated"].
void calibrated_int4_table(LoadedModel& m, const CommonOptions& o, const QualityOptions& q, nlohmann::json& figures);

}  // namespace infer::quant
