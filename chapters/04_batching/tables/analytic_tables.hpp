// Chapter 04's analytic tables, from the course's model (analytic_model.hpp): arithmetic
// intensity in prefill and decode beside a plain matrix product, the lecture's worked example
// (Llama-2-13B on an H100), and replicas against one model split over several cards.
#pragma once

#include "batching_tables.hpp"

namespace infer::batching {

// `here`: this machine, measured (bandwidth and sgemm peak), for its balance beside the H100's.
void intensity_table(const Machine& here, const CommonOptions& o, json& figures);  // table 5
void worked_example(const CommonOptions& o, json& figures);                        // table 6
void parallel_table(const CommonOptions& o, json& figures);                        // table 7

}  // namespace infer::batching
