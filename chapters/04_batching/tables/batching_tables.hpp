// What chapter 04's tables share: the flags that shape the studies, the loaded model, the
// machine they ran on (measured).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "analytic_model.hpp"
#include "app/cli.hpp"
#include "app/table_context.hpp"
#include "measure/table.hpp"

namespace infer::batching {

using nlohmann::json;

struct Settings {
  int slots = 8;
  int requests = 64;
  double gap_steps = 3;  // mean gap between arrivals, in decode steps of a full batch
  int64_t cached = 64;   // cache length of every sequence in the sweep
  int repeats = 5;
  bool skip_real = false;
  std::string plot_path;
};

struct Context : TableContext {
  const Settings& s;
  Machine machine;
};

// The FLOP/s of a large sgemm on the threads in use: the machine's compute peak for the model.
double measure_peak_flops(int repeats);

}  // namespace infer::batching
