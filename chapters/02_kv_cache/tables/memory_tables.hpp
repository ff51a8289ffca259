// Chapter 02's tables on memory: the peak of the course's loops beside ours, the cache's real
// allocations against the formula, and what growing a cache by concatenation costs against the
// preallocated one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kv_tables.hpp"
#include "tensor/device.hpp"

namespace infer::kv {

// The allocator's high-water mark on `dev` above what was allocated before `fn` ran, in bytes.
int64_t peak_of(const Device& dev, const std::function<void()>& fn);

// 8. Peak memory above the weights: the course's naive and cached loops (score matrices,
//    logits for every position, a concatenated cache) beside chapters 01 and 02, for the demo
//    (the whole runs) and for generations of 256 tokens (their largest step).
void peak_memory_table(const Context& cx, const std::vector<int32_t>& prompt, const LoopRun& cached, const LoopRun& naive);
// 9. Cache bytes: the real allocations against 2 × layers × heads × head_dim × 4 B per token.
void cache_bytes_table(const Context& cx);
// 10. A cache grown by concatenation against the preallocated one over `tokens` decode steps
//     (the cache's own work: synthetic keys and values through every layer, no weights).
void growth_table(const Context& cx, int64_t tokens);

}  // namespace infer::kv
