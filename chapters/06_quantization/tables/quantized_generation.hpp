// Chapter 06, part 2's demo (--quant): every matrix packed in one format, then the text generated
// through the kernels that multiply straight from the packed bytes, streamed as it comes.
#pragma once

#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "packed_kernels.hpp"  // PackedFormat, Activations

namespace infer::quant {

// Packs every matrix of m.model as `format` (with `activations`: fp32, or int8 where the format has
// the kernel), generates with chapter 02's loop and chapter 03's cache, and records the tokens,
// the time to first token and the median decode step in record.figures["quant"].
void generate_quantized(LoadedModel& m, const CommonOptions& o, PackedFormat format, Activations activations,
                        RunRecord& record);

}  // namespace infer::quant
