// Chapter 04's tables 1 and 2: the batch sweep (B sequences decode one token together), the
// analytic model beside it, and the plot of throughput against latency.
#pragma once

#include <vector>

#include "batch_decode.hpp"
#include "batching_tables.hpp"

namespace infer::batching {

using SweepPoint = DecodeTiming;

std::vector<SweepPoint> batch_sweep(const Context& cx, const std::vector<int>& batches);
// The batch after which doubling stops paying (see sweep.cpp).
std::size_t knee_index(const std::vector<SweepPoint>& p);
void sweep_table(const Context& cx, const std::vector<SweepPoint>& p);                     // table 1
std::vector<StepModel> model_table(const Context& cx, const std::vector<SweepPoint>& p);   // table 2
void write_plot(const Context& cx, const std::vector<SweepPoint>& sweep, const std::vector<StepModel>& model);

}  // namespace infer::batching
