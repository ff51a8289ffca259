// What chapter 02's tables share: the loaded model and flags, where figures go, and the line
// that names the machine beside every timing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "app/table_context.hpp"
#include "measure/table.hpp"
#include "model/config.hpp"
#include "01_naive_loop/naive_generate.hpp"  // Generation
#include "tokenizer/tokenizer.hpp"

namespace infer::kv {

struct Context : TableContext {
  int repeats;
  double bandwidth = 0;  // bytes/s, measured by the run
};

// One generation loop's run of the demo, with the allocator's view of it.
struct LoopRun {
  Generation gen;
  int64_t peak_bytes = 0;   // allocator high-water mark above what was allocated before (the weights)
  int64_t cache_bytes = 0;  // the KV cache's share of it (0 for a loop without a cache)
};

// Median seconds of `runs` runs after one warm-up run; a single run is timed as it is.
double time_runs(int runs, const std::function<void()>& fn);

// n real tokens (a text repeated) for the sweeps, whose content does not matter.
std::vector<int32_t> filler_tokens(const Tokenizer& tokenizer, int64_t n);

}  // namespace infer::kv
