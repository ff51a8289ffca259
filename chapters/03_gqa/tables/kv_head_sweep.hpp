// Table 9: decode time against the number of key/value heads — the GQA paper's figure (time per
// sample against the number of groups, from 1 = MQA to H = MHA) on this model's kernels.
//
// The model has H = 9 query heads and H_kv = 3 key/value heads. with_kv_heads builds variants with
// other head counts without training, changing only wk and wv:
//   fewer heads  chapter 03's pool_kv_heads (each group's heads mean-pooled; 3 → 3 changes nothing)
//   more heads   each head's rows of wk and wv repeated for the query heads that read it: the same
//                model computed with a cache of more heads (9 is chapter 02's layout, as weights)
// The variants differ in what a decode step reads: the cache, C × 2 × layers × H_kv × D × 4 B,
// and a little of the weights. Table 3 measures what pooling costs in quality; here only time.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "grouped_kv_cache.hpp"
#include "measure/bandwidth.hpp"
#include "model/llama.hpp"

namespace infer::gqa {

// w [n_heads·D, in] → [n_heads·r·D, in]: each head's block of D rows written r times, side by side
// (new head j is head j / r of w). On w's device.
Tensor repeat_head_rows(const Tensor& w, int n_heads, int repeats);
// The model with `kv_heads` key/value heads: pooled when kv_heads divides H_kv, repeated when H_kv
// divides kv_heads and kv_heads divides H (std::invalid_argument otherwise). Every weight but wk
// and wv shares its storage with `model`.
Llama with_kv_heads(const Llama& model, int kv_heads);
// The head counts with_kv_heads can build for this shape, ascending: for 9 query heads and 3
// key/value heads, 1, 3 and 9.
std::vector<int> kv_head_counts(const LlamaConfig& c);

// Writes `positions` positions of seeded random keys and values into every layer of an empty
// cache, through KvCache::attend with one query at position 0 (ops::attention ignores the keys
// past a query): O(positions) work, where a prefill would cost O(positions²) attention. A decode
// step's time depends on how many positions it reads, not on their numbers.
void fill_positions(GroupedKvCache& cache, const LlamaConfig& c, int64_t positions, Device device);

struct SweepPoint {
  int kv_heads = 0;
  int64_t context = 0;      // positions the step reads, its own included
  double seconds = 0;       // median time of one decode step
  double weight_bytes = 0;  // read once per step
  double cache_bytes = 0;   // read per step: context × 2 × layers × H_kv × D × 4 B
};
struct Sweep {
  std::vector<SweepPoint> points;  // by context, then by head count
  BandwidthResult bandwidth;       // read in turn with the steps
  int rounds = 0;
};
// One decode step at each context (cache capacity `context`, the step at position context − 1)
// for every head count, the variants and a bandwidth probe timed in turn for `rounds` rounds.
Sweep time_kv_head_sweep(const Llama& model, const std::vector<int64_t>& contexts, int rounds);

// 9. The sweep as a table: time, bytes read, and the time against the model's own head count.
void kv_head_sweep_table(const Llama& model, const CommonOptions& o, const std::vector<int64_t>& contexts, nlohmann::json& figures);

}  // namespace infer::gqa
