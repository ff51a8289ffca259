#include "block_size_table.hpp"

#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "paged_kv_cache.hpp"

namespace infer::paging {
namespace {

// One decode step of `slots` sequences, each holding `cached` positions, per layout: contiguous
// caches and paged caches of each block size. The layouts are timed in turn, repeat after
// repeat, so that a slow moment of a shared machine hits all of them alike; each run writes the
// same position again (paged caches are truncated back first).
struct TimedLayout {
  std::unique_ptr<BlockPool> pool;  // declared first: the caches release into it
  std::vector<std::unique_ptr<KvStore>> caches;
  std::vector<double> seconds;
};

std::vector<double> time_layouts(const Context& cx, std::span<const int32_t> text) {
  const LlamaConfig& c = cx.m.model.config();
  const int64_t cached = cx.s.cached;
  const int batch = cx.s.slots;
  const auto token = [&](int64_t i) { return text[i % std::ssize(text)]; };
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> next;
  for (int b = 0; b < batch; ++b) {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < cached; ++i) p.push_back(token(i + 7 * b));
    prompts.push_back(std::move(p));
    next.push_back(token(3 + b));
  }
  std::vector<TimedLayout> layouts(1 + kBlockSizes.size());
  for (int b = 0; b < batch; ++b) layouts[0].caches.push_back(std::make_unique<GroupedKvCache>(c, cached + 1, cx.m.model.device()));
  for (std::size_t i = 0; i < kBlockSizes.size(); ++i) {
    const int B = kBlockSizes[i];
    const int64_t blocks = batch * ((cached + 1 + B - 1) / B);
    layouts[i + 1].pool = std::make_unique<BlockPool>(c, B, blocks * B * cx.bytes_per_token, cx.m.model.device());
    for (int b = 0; b < batch; ++b) {
      auto cache = std::make_unique<PagedKvCache>(*layouts[i + 1].pool, c);
      if (!cache->reserve(cached + 1)) throw std::logic_error("time_layouts: pool too small");
      layouts[i + 1].caches.push_back(std::move(cache));
    }
  }
  ProgressBar bar("block sizes: prefilling, then timing decode steps", std::ssize(layouts) * (1 + cx.s.repeats));
  const auto chunks_of = [&](TimedLayout& l, bool prefill) {
    std::vector<SequenceChunk> chunks;
    for (int b = 0; b < batch; ++b)
      chunks.push_back({prefill ? std::span<const int32_t>(prompts[b]) : std::span<const int32_t>(next).subspan(b, 1),
                        prefill ? 0 : cached, l.caches[b].get(), false});
    return chunks;
  };
  const auto rewind = [&](TimedLayout& l) {
    if (l.pool == nullptr) return;  // a contiguous cache is simply written at the same position again
    for (auto& cache : l.caches) static_cast<PagedKvCache&>(*cache).truncate(cached);
  };
  for (TimedLayout& l : layouts) {
    cx.m.model.forward_batch(chunks_of(l, true));
    cx.m.model.forward_batch(chunks_of(l, false));  // warm-up
    bar.advance();
  }
  for (int r = 0; r < cx.s.repeats; ++r)
    for (TimedLayout& l : layouts) {
      rewind(l);
      const std::vector<SequenceChunk> chunks = chunks_of(l, false);
      Stopwatch watch;
      cx.m.model.forward_batch(chunks);
      l.seconds.push_back(watch.seconds());
      bar.advance();
    }
  bar.done();
  std::vector<double> medians;
  for (const TimedLayout& l : layouts) medians.push_back(median(l.seconds));
  return medians;
}

}  // namespace

void block_size_table(const Context& cx, const WorkloadRuns& runs) {
  const std::vector<int32_t> text = cx.m.tokenizer.encode(
      "Blocks of a fixed size hold the keys and values of a few positions each; a table per sequence says where its "
      "blocks are, and attention walks the table. ");
  const std::vector<double> medians = time_layouts(cx, text);
  const double contiguous = medians[0];
  const std::vector<double> paged(medians.begin() + 1, medians.end());

  Table t(fmt::format("5. Block size: memory waste against step time ({} sequences × {} cached positions, median of {}; {})", cx.s.slots,
                      cx.s.cached, cx.s.repeats, cx.machine_line),
          {"layout", "bytes per block", "waste on the workload (table 1)", fmt::format("blocks per sequence at {} positions", cx.s.cached), "step time (ms)",
           "× contiguous"});
  t.add_row({"contiguous (chapter 03's GroupedKvCache)", "", cell::percent(runs.contiguous.memory.waste()), "1", fmt::format("{:.1f}", contiguous * 1e3),
             "1.00×"});
  for (std::size_t i = 0; i < kBlockSizes.size(); ++i) {
    const int b = kBlockSizes[i];
    t.add_row({fmt::format("paged, blocks of {}", b), format_bytes(static_cast<double>(b) * static_cast<double>(cx.bytes_per_token)),
               cell::percent(runs.paged[i].memory.waste()), std::to_string((cx.s.cached + b - 1) / b), fmt::format("{:.1f}", paged[i] * 1e3),
               cell::times(paged[i] / contiguous)});
    cx.figures["block_size"].push_back({{"block_size", b}, {"waste", runs.paged[i].memory.waste()}, {"step_seconds", paged[i]},
                                        {"contiguous_step_seconds", contiguous}});
  }
  t.add_note("Smaller blocks waste less (a sequence leaves at most B − 1 positions of its last block unused) but give attention more, "
             "shorter runs of rows to walk and the scheduler more blocks to track; larger blocks the reverse. The step is mostly "
             "the weights' matrix products, which paging does not touch, so the attention loop's cost moves it little.");
  cx.emit(t);
}

}  // namespace infer::paging
