// One real run of chapter 04's workload, contiguous or paged, with the K/V memory it held measured
// after every step — what tables 1, 2 and 5 compare — and the same workload replayed without the
// model (table 6). Study machinery, not the lesson: the engine the run is served by is wrapped
// (workload_runs.cpp's MeteredEngine) and never changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "04_batching/batch_decode.hpp"
#include "04_batching/request.hpp"
#include "paged_scheduler.hpp"
#include "paging_tables.hpp"

namespace infer::paging {

// Averages over the steps of a run: bytes the layout reserved, bytes the running sequences had
// written, and what a contiguous cache reserved for prompt + the length cap would have held.
struct MemorySummary {
  double mean_reserved = 0, peak_reserved = 0, mean_written = 0, mean_capped = 0;
  double waste() const { return mean_reserved > 0 ? 1 - mean_written / mean_reserved : 0; }
  double capped_waste() const { return mean_capped > 0 ? 1 - mean_written / mean_capped : 0; }
};

// One real run of the workload and what it measured.
struct WorkloadRun {
  std::string layout;
  std::vector<Request> requests;
  std::vector<StepLog> steps;
  MemorySummary memory;
  double seconds = 0;
  int64_t preemptions = 0;
  int max_running = 0;
  int64_t tokens() const { return total_new_tokens(requests); }
};

// Chapter 04's continuous batching with chapter 04's BatchDecoder (a contiguous cache per
// request, sized for its own length), `slots` at once.
WorkloadRun run_contiguous(const Context& cx, const std::vector<Request>& requests, int slots);
// The PagedScheduler over a PagedEngine whose pool holds `budget` bytes in blocks of `block_size`.
WorkloadRun run_paged(const Context& cx, const std::vector<Request>& requests, int slots, int block_size, std::size_t budget,
                      bool prefix_caching);
// Replays the workload without the model: `engine` (model-free; its step returns placeholder
// tokens) runs under the PagedScheduler on a virtual clock, with memory, not slots, limiting
// admission. Each request generates exactly its max_new_tokens whatever the tokens are, so the
// steps, the admissions and every memory figure depend only on the lengths and the engine's
// memory; it takes milliseconds.
// `reserved` reads the bytes the engine's layout holds now.
WorkloadRun replay(const Context& cx, const std::vector<Request>& requests, MemoryBoundEngine& engine, std::function<double()> reserved,
                   std::string layout);

}  // namespace infer::paging
