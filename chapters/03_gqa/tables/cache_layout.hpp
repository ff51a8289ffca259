// Table 10: the grouped cache's layout — the same keys and values stored position by position
// ([max_tokens, H_kv·D], a row per position) or head by head ([H_kv, max_tokens, D], a stream
// per head; GroupedKvCache's default), and what a decode step costs with each as the context
// grows: the step split into attention (the cache read) and the rest (mostly the weights).
//
// A decode step's attention reads, for each key/value head, that head's keys and values of every
// position. Position by position, those are 256 bytes out of every 768-byte row, a strided walk;
// head by head, one contiguous stream. Attention gives the same bits either way (the kernel is
// told where the rows are, tensor/cpu_attention.hpp); only the order of the bytes in memory
// changes, so any difference in time is the memory system's.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "grouped_kv_cache.hpp"
#include "measure/bandwidth.hpp"
#include "model/llama.hpp"

namespace infer::gqa {

struct LayoutPoint {
  KvLayout layout = KvLayout::head_major;
  int64_t context = 0;       // positions the step reads, its own included
  double step_seconds = 0;   // median time of one decode step
  double attention_seconds = 0;  // median time inside it spent in the cache (writing the step's k, v, then attention)
  double cache_bytes = 0;    // keys and values the step's attention reads: context × 2 × layers × H_kv × D × 4 B
};
struct LayoutSweep {
  std::vector<LayoutPoint> points;  // by context, then position-major before head-major
  BandwidthResult bandwidth;        // read in turn with the steps
  int rounds = 0;
};
// One decode step at each context (the step at position context − 1, its cache filled with
// seeded random keys and values) with each layout, both and a bandwidth probe timed in turn.
LayoutSweep time_cache_layouts(const Llama& model, const std::vector<int64_t>& contexts, int rounds);

// 10. The sweep as a table.
void cache_layout_table(const Llama& model, const CommonOptions& o, const std::vector<int64_t>& contexts,
                        nlohmann::json& figures);

}  // namespace infer::gqa
