// Chapter 04's tables 3 and 4: the skewed workload under static and continuous batching, run
// for real and simulated with the sweep's step times.
#pragma once

#include <vector>

#include "batching_tables.hpp"
#include "batch_sweep.hpp"

namespace infer::batching {

void workload_tables(const Context& cx, const std::vector<SweepPoint>& sweep);

}  // namespace infer::batching
